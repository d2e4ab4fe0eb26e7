"""`plate bench`: the kernels (``kernels``) and the runner that measures them (``run``)."""
