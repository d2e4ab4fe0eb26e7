"""torch's device-backend autoload entry point (`torch.backends: plate`).

Kept apart from the package's __init__ so that importing the package before torch works: then the
package's own `import torch` runs this hook while the package is still half-imported, and the hook
leaves the registration to the package, which finishes it itself."""

import sys


def autoload() -> None:
    package = sys.modules["triton_plate_backend.torch_device"]  # importing this module imported it
    if "_extension" not in vars(package):  # half-imported: it registers plate when its import ends
        return
    package._autoload()
