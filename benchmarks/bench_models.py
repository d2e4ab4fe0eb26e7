"""Real models on plate through torch.compile: torchvision CNNs and a ViT, Hugging Face transformers.

    PYTHONPATH=.:LIBS python benchmarks/bench_models.py [--models resnet18,gpt2,...] [--machine plate-mini]
                                                        [--no-autotune] [--no-cpu-compile] [--train] [--profile N]

LIBS holds torchvision and transformers, installed beside this torch without their dependencies' C++ parts:
``pip install --no-deps --target LIBS torchvision==0.28.0 transformers`` plus transformers' pure-Python
requirements (huggingface-hub and what it imports, regex, tokenizers, safetensors, tqdm), each ``--no-deps``.
A model whose library does not import is skipped with a message. Every model is built from a small config with
random weights (a fixed seed): nothing is downloaded.

For each model, in this one process, with Dynamo reset and Inductor's caches off before each compile:

- plate, default mode: compile seconds (first call minus a second call), the modeled time of one more forward
  (``inductor_plate.collect_profiles``), the host ops counted inside the compiled region
  (``inductor_plate.host_fallbacks()``), the largest error against CPU eager;
- plate, max-autotune (``max-autotune-no-cudagraphs``): the same (``--no-autotune`` leaves it out);
- Inductor compiling the same model for the CPU: compile seconds the same way (``--no-cpu-compile`` leaves it out).

What "compile seconds" count (plate and CPU alike: the first call minus the second): Dynamo, AOTAutograd,
Inductor, the compile of every kernel of the graph (TRITON_ALWAYS_COMPILE: Triton's cache bypassed, so each run
compiles them again), the first launches and the imports the first call makes. In the default mode Inductor
compiles one configuration per plate kernel, the cost model's (inductor_plate/kernel_config.py), and benchmarks
none; max-autotune compiles and benchmarks them all. Not counted when Triton's cache holds them: plate's eager
kernels (its ATen, which CUDA ships compiled in libtorch), which Inductor's constant folding runs inside the
compile; they load from the cache whatever TRITON_ALWAYS_COMPILE says (eager_ops/launch.py ``library_compiles``),
and a cold cache (the first run on a machine, or after a change to plate's source) compiles and counts them.

``--train`` adds one training step of the GPT-2 config (forward, backward, SGD), compiled on plate against the
same step in CPU eager: the loss and the largest parameter difference after the step, and the host ops.
``--profile N`` prints the N kernels of most modeled time of each default-mode run.
Figures are measurements of this run on this machine, not assertions.
"""

from __future__ import annotations

import argparse
import copy
import functools
import importlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SEQ = 16  # tokens per sequence of the language models
IMAGE = 32  # side of the vision models' input images


def import_torchvision_models():
    """torchvision.models. The stub: a torchvision wheel built for another torch cannot load its C++ ops
    (nms, roi_align, ...), and its import then fails on the fake kernels it registers for the schemas
    torchvision::nms and ::qnms, which only that library defines ("operator torchvision::nms does not
    exist"). The model definitions are pure Python and call none of those ops, so after a failed import
    this defines the two schemas (no kernels) and imports again. Nothing is defined when the ops loaded."""
    import torch

    try:
        return importlib.import_module("torchvision.models")
    except RuntimeError as error:
        if "torchvision::" not in str(error):
            raise
    for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[name]  # the half-imported package
    global _TORCHVISION_STUB
    _TORCHVISION_STUB = torch.library.Library("torchvision", "DEF")  # kept alive: the schemas live with it
    for op in ("nms", "qnms"):
        _TORCHVISION_STUB.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    return importlib.import_module("torchvision.models")


_TORCHVISION_STUB = None


@functools.cache
def output_module():
    """The class of a model wrapped to give its one output tensor (a Hugging Face model returns a ModelOutput):
    what plate and the CPU compare. Made on first use: torch is imported after PLATE_MACHINE is set."""
    import torch

    class Output(torch.nn.Module):
        def __init__(self, model, names: tuple[str, ...], field: str | None):
            super().__init__()
            self.model, self.names, self.field = model, names, field

        def forward(self, *args):
            out = self.model(**dict(zip(self.names, args, strict=True)))
            return getattr(out, self.field) if self.field else out

    return Output


def torchvision_model(build):
    def make():
        import torch

        models = import_torchvision_models()
        return output_module()(build(models), ("x",), None), (torch.randn(2, 3, IMAGE, IMAGE),)

    return make


def transformers_model(
    config_name: str, model_name: str, field: str, encoder_decoder: bool = False, inputs: str = "ids", **config
):
    def make():
        import torch

        import_torchvision_models_if_present()  # transformers imports torchvision when it finds it
        transformers = importlib.import_module("transformers")
        cfg = getattr(transformers, config_name)(**config)
        model = getattr(transformers, model_name)(cfg)
        ids = torch.randint(0, 128, (2, SEQ))
        if inputs == "audio":  # log-mel features (2 x the encoder's positions frames) and decoder tokens
            features = torch.randn(2, config["num_mel_bins"], 2 * config["max_source_positions"])
            return output_module()(model, ("input_features", "decoder_input_ids"), field), (features, ids)
        if inputs == "image_text":
            side = config["vision_config"]["image_size"]
            return output_module()(model, ("input_ids", "pixel_values"), field), (ids, torch.randn(2, 3, side, side))
        if encoder_decoder:  # one decoder pass over given tokens (teacher forcing)
            names = ("input_ids", "attention_mask", "decoder_input_ids")
            return output_module()(model, names, field), (ids, torch.ones_like(ids), ids.flip(-1))
        return output_module()(model, ("input_ids",), field), (ids,)

    return make


def import_torchvision_models_if_present():
    try:
        import_torchvision_models()
    except ImportError:
        pass


SMALL_TRANSFORMER = dict(vocab_size=128, pad_token_id=0, bos_token_id=1, eos_token_id=2)
SMALL_DECODER = dict(  # Llama-shaped: grouped-query attention (4 query heads, 2 key/value heads), rotary embeddings
    num_hidden_layers=2,
    hidden_size=64,
    intermediate_size=128,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
    **SMALL_TRANSFORMER,
)

MODELS = {
    "resnet18": torchvision_model(lambda m: m.resnet18(num_classes=10)),
    "mobilenet_v3_small": torchvision_model(lambda m: m.mobilenet_v3_small(num_classes=10)),
    "shufflenet_v2": torchvision_model(lambda m: m.shufflenet_v2_x0_5(num_classes=10)),
    "squeezenet": torchvision_model(lambda m: m.squeezenet1_1(num_classes=10)),
    "efficientnet_b0": torchvision_model(lambda m: m.efficientnet_b0(num_classes=10)),
    "regnet_y_400mf": torchvision_model(lambda m: m.regnet_y_400mf(num_classes=10)),
    "convnext_tiny": torchvision_model(lambda m: m.convnext_tiny(num_classes=10)),
    "swin_t": torchvision_model(lambda m: m.swin_t(num_classes=10)),
    "vit": torchvision_model(
        lambda m: m.VisionTransformer(
            image_size=IMAGE, patch_size=8, num_layers=2, num_heads=2, hidden_dim=64, mlp_dim=128, num_classes=10
        )
    ),
    "gpt2": transformers_model(
        "GPT2Config", "GPT2LMHeadModel", "logits", n_layer=2, n_embd=64, n_head=2, n_positions=64, **SMALL_TRANSFORMER
    ),
    "llama": transformers_model("LlamaConfig", "LlamaForCausalLM", "logits", **SMALL_DECODER),
    "mistral": transformers_model("MistralConfig", "MistralForCausalLM", "logits", sliding_window=8, **SMALL_DECODER),
    "qwen2": transformers_model("Qwen2Config", "Qwen2ForCausalLM", "logits", **SMALL_DECODER),
    "gemma": transformers_model("GemmaConfig", "GemmaForCausalLM", "logits", head_dim=16, **SMALL_DECODER),
    "phi": transformers_model("PhiConfig", "PhiForCausalLM", "logits", partial_rotary_factor=0.5, **SMALL_DECODER),
    "mixtral": transformers_model(
        "MixtralConfig", "MixtralForCausalLM", "logits", num_local_experts=4, num_experts_per_tok=2, **SMALL_DECODER
    ),
    "mamba": transformers_model(  # HF's torch path (no mamba_ssm kernels); use_cache off: its cache breaks Dynamo
        "MambaConfig",
        "MambaForCausalLM",
        "logits",
        hidden_size=64,
        state_size=8,
        num_hidden_layers=2,
        expand=2,
        conv_kernel=4,
        use_cache=False,
        **SMALL_TRANSFORMER,
    ),
    "whisper": transformers_model(
        "WhisperConfig",
        "WhisperForConditionalGeneration",
        "logits",
        inputs="audio",
        num_mel_bins=16,
        max_source_positions=16,
        max_target_positions=32,
        d_model=64,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        decoder_start_token_id=1,
        **SMALL_TRANSFORMER,
    ),
    "clip": transformers_model(
        "CLIPConfig",
        "CLIPModel",
        "logits_per_image",
        inputs="image_text",
        text_config=dict(
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=32,
            **SMALL_TRANSFORMER,
        ),
        vision_config=dict(
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            image_size=32,
            patch_size=8,
        ),
        projection_dim=32,
    ),
    "distilbert": transformers_model(
        "DistilBertConfig",
        "DistilBertForMaskedLM",
        "logits",
        n_layers=2,
        dim=64,
        hidden_dim=128,
        n_heads=4,
        max_position_embeddings=64,
        **SMALL_TRANSFORMER,
    ),
    "t5": transformers_model(
        "T5Config",
        "T5ForConditionalGeneration",
        "logits",
        encoder_decoder=True,
        num_layers=2,
        num_decoder_layers=2,
        d_model=64,
        d_kv=16,
        d_ff=128,
        num_heads=4,
        decoder_start_token_id=0,
        **SMALL_TRANSFORMER,
    ),
    "bart": transformers_model(
        "BartConfig",
        "BartForConditionalGeneration",
        "logits",
        encoder_decoder=True,
        encoder_layers=2,
        decoder_layers=2,
        d_model=64,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        max_position_embeddings=64,
        **SMALL_TRANSFORMER,
    ),
    "bert": transformers_model(
        "BertConfig",
        "BertModel",
        "last_hidden_state",
        num_hidden_layers=2,
        hidden_size=64,
        intermediate_size=128,
        num_attention_heads=4,
        max_position_embeddings=64,
        **SMALL_TRANSFORMER,
    ),
}
TOLERANCE = 1e-3  # of the output's largest magnitude (at least 1): fp32 sums in another order


@dataclass
class Run:
    modeled_us: float
    launches: int
    host_ops: dict
    error: float
    compile_s: float
    profile: object


def compile_seconds(compiled, inputs) -> tuple[float, object]:
    """(first call minus a second call, the second call's output): the compile, without the run itself."""
    start = time.perf_counter()
    compiled(*inputs)
    first = time.perf_counter() - start
    start = time.perf_counter()
    out = compiled(*inputs)
    return max(first - (time.perf_counter() - start), 0.0), out


def relative_error(out, want) -> float:
    return (out.cpu().float() - want.float()).abs().max().item() / max(want.float().abs().max().item(), 1.0)


def run_plate(model, inputs, want, mode: str | None) -> Run:
    import torch

    import inductor_plate

    plate_model = copy.deepcopy(model).to("plate")
    plate_inputs = [x.to("plate") for x in inputs]
    torch._dynamo.reset()
    inductor_plate.reset_host_fallbacks()
    compiled = torch.compile(plate_model, mode=mode)
    compile_s, _ = compile_seconds(compiled, plate_inputs)
    with inductor_plate.collect_profiles() as profile:
        out = compiled(*plate_inputs)
    host = dict(inductor_plate.host_fallbacks())
    return Run(profile.time_ns / 1e3, len(profile.launches), host, relative_error(out, want), compile_s, profile)


def cpu_compile_seconds(model, inputs) -> float:
    import torch

    torch._dynamo.reset()
    return compile_seconds(torch.compile(copy.deepcopy(model)), list(inputs))[0]


def train_gpt2() -> str:
    """One SGD step of the GPT-2 config (dropout off) compiled on plate against CPU eager."""
    import torch

    import inductor_plate

    model, (ids,) = MODELS["gpt2"]()
    model.model.config.use_cache = False
    for module in model.modules():  # dropout draws from each device's own generator: the two steps would differ
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0

    def step(m, opt, ids):
        loss = m.model(ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    cpu = copy.deepcopy(model).train()
    want = step(cpu, torch.optim.SGD(cpu.parameters(), lr=0.1), ids)
    plate = copy.deepcopy(model).train().to("plate")
    tied = plate.model.lm_head.weight is plate.model.transformer.wte.weight
    torch._dynamo.reset()
    inductor_plate.reset_host_fallbacks()
    compiled = torch.compile(step)
    start = time.perf_counter()
    with inductor_plate.collect_profiles() as profile:
        loss = compiled(plate, torch.optim.SGD(plate.parameters(), lr=0.1), ids.to("plate"))
    seconds = time.perf_counter() - start
    param_error = max(
        (p.detach().cpu() - q.detach()).abs().max().item()
        for p, q in zip(plate.parameters(), cpu.parameters(), strict=True)
    )
    host = dict(inductor_plate.host_fallbacks()) or "none"
    return (
        f"GPT-2 training step (forward, backward, SGD lr 0.1, dropout off), compiled on plate vs CPU eager: "
        f"loss {loss.item():.6f} vs {want.item():.6f}, largest parameter difference after the step "
        f"{param_error:.2e}, LM head tied to the embedding on plate: {tied}, {len(profile.launches)} launches, "
        f"{profile.time_ns / 1e3:,.1f} us modeled, {seconds:.1f} s wall (compile included), host ops: {host}"
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--machine", default="plate-mini")
    p.add_argument("--no-autotune", action="store_true", help="leave out the max-autotune compile")
    p.add_argument("--no-cpu-compile", action="store_true", help="leave out Inductor for the CPU")
    p.add_argument("--train", action="store_true", help="also one compiled GPT-2 training step")
    p.add_argument("--profile", type=int, default=0, help="print the N kernels of most modeled time")
    args = p.parse_args(argv)
    os.environ["PLATE_MACHINE"] = args.machine
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"  # Triton's own kernel cache would skip the plate lowering
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # its import logs docstring checks as errors
    import torch

    try:
        import inductor_plate  # noqa: F401
    except ModuleNotFoundError:  # a checkout that is not pip-installed: run from the repository
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        import inductor_plate  # noqa: F401

    print(f"real models, eval forward, caches off, machine {args.machine}, torch {torch.__version__}", flush=True)
    header = (
        f"{'model':<20}{'default us':>12}{'autotune us':>13}{'ratio':>7}{'launches':>10}{'host ops':>10}"
        f"{'error':>10}{'compile s: default':>20}{'autotune':>10}{'cpu':>8}{'plate/cpu':>11}"
    )
    print(header, flush=True)
    totals = [0.0, 0.0]
    with torch._inductor.config.patch(force_disable_caches=True), torch.no_grad():
        for name in filter(None, args.models.split(",")):
            torch.manual_seed(0)
            try:
                model, inputs = MODELS[name]()
            except ImportError as error:
                print(f"{name:<20}skipped: its library does not import ({error})", flush=True)
                continue
            model = model.eval()
            want = model(*inputs)
            default = run_plate(model, inputs, want, None)
            tuned = None if args.no_autotune else run_plate(model, inputs, want, "max-autotune-no-cudagraphs")
            cpu_s = None if args.no_cpu_compile else cpu_compile_seconds(model, inputs)
            host = sum(default.host_ops.values()) + (sum(tuned.host_ops.values()) if tuned else 0)
            error = max(default.error, tuned.error if tuned else 0.0)
            print(
                f"{name:<20}{default.modeled_us:>12,.1f}"
                + (
                    f"{tuned.modeled_us:>13,.1f}{default.modeled_us / tuned.modeled_us:>7.2f}"
                    if tuned
                    else f"{'-':>20}"
                )
                + f"{default.launches:>5}/{tuned.launches if tuned else '-':<4}{host:>10}{error:>10.1e}"
                + f"{default.compile_s:>20.1f}"
                + (f"{tuned.compile_s:>10.1f}" if tuned else f"{'-':>10}")
                + (f"{cpu_s:>8.1f}{default.compile_s / cpu_s:>11.2f}" if cpu_s else f"{'-':>19}")
                + ("" if error <= TOLERANCE else "  MISMATCH"),
                flush=True,
            )
            if cpu_s:
                totals[0] += default.compile_s
                totals[1] += cpu_s
            for run in (default, tuned):
                if run and run.host_ops:
                    print(f"{'':<20}host ops: {run.host_ops}", flush=True)
            if args.profile:
                print(default.profile.report(top=args.profile), flush=True)
    if totals[1]:
        print(
            f"compile seconds, all models: plate default {totals[0]:.1f}, cpu {totals[1]:.1f}, ratio "
            f"{totals[0] / totals[1]:.2f}",
            flush=True,
        )
    if args.train:
        print(train_gpt2(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
