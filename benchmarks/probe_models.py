"""Probe models plate has not run: eager forward, torch.compile (default, dynamic=True), a compiled training step
and bf16, each against the same model in CPU eager, with the host ops of each test.

    PYTHONPATH=.:LIBS python benchmarks/probe_models.py MODEL [--tests eager,compile,dynamic,train,bf16]

Tests: eager, compile, maxat (max-autotune-no-cudagraphs), dynamic (dynamic=True, then inputs of another size),
bf16 / bf16c (weights and inputs in bf16, eager / compiled), autocast (compiled under
``torch.autocast("plate", bf16)`` against CPU eager under ``torch.autocast("cpu", bf16)``), train / adamw (one
compiled step of forward, backward and SGD / AdamW). The ``hand_*`` models (hand_models.py) need no LIBS.

LIBS: transformers and torchvision installed without their C++ parts (see bench_models.py). Random weights
from seed 0, small configs, nothing downloaded. One line per test: the error (largest |plate - CPU| over the
CPU output's largest magnitude, at least 1), the host ops (``torch.plate.host_ops()`` plus
``inductor_plate.host_fallbacks()``), graphs / breaks for compiled tests. Figures are measurements, not assertions.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import os
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hand_models  # noqa: E402

SEQ = 16


def hf(config_name, model_name, field, inputs="ids", seq=SEQ, **config):
    def make():
        import torch
        from bench_models import import_torchvision_models_if_present, output_module

        import_torchvision_models_if_present()
        transformers = importlib.import_module("transformers")
        cfg = getattr(transformers, config_name)(**config)
        model = getattr(transformers, model_name)(cfg)
        if inputs == "ids":
            make_in = lambda n: (torch.randint(3, 128, (2, n)),)  # noqa: E731
            names = ("input_ids",)
        elif inputs == "ids_mask":

            def make_in(n):
                ids = torch.randint(3, 128, (2, n))
                mask = torch.ones_like(ids)
                mask[1, -4:] = 0
                return ids, mask

            names = ("input_ids", "attention_mask")
        elif inputs == "audio":
            make_in = lambda n: (torch.randn(2, n * 100),)  # noqa: E731
            names = ("input_values",)
        elif inputs == "pixels":
            side = config.get("image_size", 32)
            make_in = lambda n: (torch.randn(2, config.get("num_channels", 3), side, side),)  # noqa: E731
            names = ("pixel_values",)
        elif inputs == "pixels_noise":  # ViTMAE shuffles patches by a noise tensor: given, the same on both sides
            side = config["image_size"]
            patches = (side // config["patch_size"]) ** 2
            make_in = lambda n: (torch.randn(2, 3, side, side), torch.rand(2, patches))  # noqa: E731
            names = ("pixel_values", "noise")
        else:
            raise ValueError(inputs)
        return output_module()(model, names, field), make_in(seq), make_in(seq - 4)

    return make


def tv(build, side=32, video=False, name="x"):
    def make():
        import torch
        from bench_models import import_torchvision_models, output_module

        import_torchvision_models()
        import torchvision

        model = build(torchvision.models)
        shape = (2, 3, 4, side, side) if video else (2, 3, side, side)
        alt = (3, *shape[1:])
        return output_module()(model, (name,), None), (torch.randn(shape),), (torch.randn(alt),)

    return make


# wav2vec2 and hubert: the same small conv feature extractor and encoder
AUDIO = dict(
    seq=8,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    conv_dim=(32, 32, 32),
    conv_stride=(5, 2, 2),
    conv_kernel=(10, 3, 3),
    num_conv_pos_embeddings=16,
    num_conv_pos_embedding_groups=4,
    mask_time_prob=0.0,  # SpecAugment and LayerDrop draw at random in training: off, as dropout is
    layerdrop=0.0,
    attention_dropout=0.0,  # functional dropout in the attention: not an nn.Dropout the probe can zero
    hidden_dropout=0.0,
    activation_dropout=0.0,
    feat_proj_dropout=0.0,
)


SMALL = dict(vocab_size=128, pad_token_id=0, bos_token_id=1, eos_token_id=2)
ENC = dict(
    num_hidden_layers=2,
    hidden_size=64,
    intermediate_size=128,
    num_attention_heads=4,
    max_position_embeddings=64,
    **SMALL,
)
DEC = dict(
    num_hidden_layers=2,
    hidden_size=64,
    intermediate_size=128,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
    **SMALL,
)

MODELS = {
    "roberta": hf("RobertaConfig", "RobertaModel", "last_hidden_state", "ids_mask", **ENC),
    "xlm_roberta": hf("XLMRobertaConfig", "XLMRobertaModel", "last_hidden_state", "ids_mask", **ENC),
    "albert": hf("AlbertConfig", "AlbertModel", "last_hidden_state", "ids_mask", embedding_size=32, **ENC),
    "electra": hf("ElectraConfig", "ElectraForPreTraining", "logits", "ids_mask", embedding_size=32, **ENC),
    "deberta_v2": hf(
        "DebertaV2Config",
        "DebertaV2Model",
        "last_hidden_state",
        "ids_mask",
        relative_attention=True,
        position_buckets=8,
        max_relative_positions=16,
        pos_att_type=["p2c", "c2p"],
        **ENC,
    ),
    "longformer": hf(
        "LongformerConfig", "LongformerModel", "last_hidden_state", "ids_mask", seq=32, attention_window=8, **ENC
    ),
    "bigbird": hf(
        "BigBirdConfig",
        "BigBirdModel",
        "last_hidden_state",
        "ids_mask",
        seq=64,
        attention_type="block_sparse",
        block_size=4,
        num_random_blocks=2,
        **ENC,
    ),
    "gpt_neox": hf(
        "GPTNeoXConfig",
        "GPTNeoXForCausalLM",
        "logits",
        rotary_pct=0.5,
        **{k: v for k, v in DEC.items() if k != "num_key_value_heads"},
    ),
    "gptj": hf(
        "GPTJConfig", "GPTJForCausalLM", "logits", n_layer=2, n_embd=64, n_head=4, n_positions=64, rotary_dim=8, **SMALL
    ),
    "opt": hf(
        "OPTConfig",
        "OPTForCausalLM",
        "logits",
        num_hidden_layers=2,
        hidden_size=64,
        ffn_dim=128,
        num_attention_heads=4,
        max_position_embeddings=64,
        word_embed_proj_dim=64,
        **SMALL,
    ),
    "bloom": hf("BloomConfig", "BloomForCausalLM", "logits", n_layer=2, hidden_size=64, n_head=4, **SMALL),
    "falcon": hf(
        "FalconConfig",
        "FalconForCausalLM",
        "logits",
        num_hidden_layers=2,
        hidden_size=64,
        num_attention_heads=4,
        new_decoder_architecture=True,
        num_kv_heads=2,
        alibi=False,
        **SMALL,
    ),
    "falcon_alibi": hf(
        "FalconConfig",
        "FalconForCausalLM",
        "logits",
        num_hidden_layers=2,
        hidden_size=64,
        num_attention_heads=4,
        alibi=True,
        multi_query=True,
        **SMALL,
    ),
    "starcoder2": hf("Starcoder2Config", "Starcoder2ForCausalLM", "logits", sliding_window=8, **DEC),
    "olmo": hf("OlmoConfig", "OlmoForCausalLM", "logits", **DEC),
    "phi3": hf("Phi3Config", "Phi3ForCausalLM", "logits", **DEC),
    "qwen3": hf("Qwen3Config", "Qwen3ForCausalLM", "logits", head_dim=16, **DEC),
    "qwen2_moe": hf(
        "Qwen2MoeConfig",
        "Qwen2MoeForCausalLM",
        "logits",
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=64,
        shared_expert_intermediate_size=64,
        **DEC,
    ),
    "granite": hf("GraniteConfig", "GraniteForCausalLM", "logits", **DEC),
    "recurrent_gemma": hf(
        "RecurrentGemmaConfig",
        "RecurrentGemmaForCausalLM",
        "logits",
        num_hidden_layers=3,
        hidden_size=64,
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=1,
        lru_width=64,
        attention_window_size=8,
        conv1d_width=4,
        head_dim=16,
        vocab_size=128,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    ),
    "rwkv": hf(
        "RwkvConfig",
        "RwkvForCausalLM",
        "logits",
        num_hidden_layers=2,
        hidden_size=64,
        attention_hidden_size=64,
        intermediate_size=128,
        context_length=64,
        vocab_size=128,
    ),
    "wav2vec2": hf(
        "Wav2Vec2Config",
        "Wav2Vec2Model",
        "last_hidden_state",
        "audio",
        **AUDIO,
        feat_extract_norm="group",
    ),
    "hubert": hf(
        "HubertConfig",
        "HubertModel",
        "last_hidden_state",
        "audio",
        **AUDIO,
    ),
    "vit_mae": hf(
        "ViTMAEConfig",
        "ViTMAEModel",
        "last_hidden_state",
        "pixels_noise",
        image_size=32,
        patch_size=8,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        mask_ratio=0.0,
    ),
    "swinv2": hf(
        "Swinv2Config",
        "Swinv2Model",
        "last_hidden_state",
        "pixels",
        image_size=32,
        patch_size=4,
        embed_dim=16,
        depths=[1, 1],
        num_heads=[2, 2],
        window_size=4,
    ),
    "segformer": hf(
        "SegformerConfig",
        "SegformerForSemanticSegmentation",
        "logits",
        "pixels",
        image_size=32,
        num_encoder_blocks=2,
        depths=[1, 1],
        sr_ratios=[2, 1],
        hidden_sizes=[16, 32],
        patch_sizes=[7, 3],
        strides=[4, 2],
        num_attention_heads=[1, 2],
        decoder_hidden_size=32,
        num_labels=4,
    ),
    "resnet18": tv(lambda m: m.resnet18(num_classes=10)),
    "densenet": tv(lambda m: m.densenet121(num_classes=10)),
    "mnasnet": tv(lambda m: m.mnasnet0_5(num_classes=10)),
    "googlenet": tv(lambda m: m.googlenet(num_classes=10, aux_logits=False, init_weights=True)),
    "inception": tv(lambda m: m.inception_v3(num_classes=10, aux_logits=False, init_weights=True), side=75),
    "deeplabv3": tv(
        lambda m: m.segmentation.deeplabv3_mobilenet_v3_large(num_classes=4, weights_backbone=None, aux_loss=False),
        side=64,
    ),
    "lraspp": tv(
        lambda m: m.segmentation.lraspp_mobilenet_v3_large(num_classes=4, weights_backbone=None), side=64, name="input"
    ),
    "r3d_18": tv(lambda m: m.video.r3d_18(num_classes=10), side=16, video=True),
    "raft": None,  # below
    "shufflenet": tv(lambda m: m.shufflenet_v2_x0_5(num_classes=10)),
}


def raft():
    import torch
    from bench_models import import_torchvision_models

    import_torchvision_models()
    import torchvision

    model = torchvision.models.optical_flow.raft_small()

    class Last(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, a, b):
            return self.m(a, b, num_flow_updates=2)[-1]

    return (
        Last(model),
        (torch.randn(1, 3, 128, 128), torch.randn(1, 3, 128, 128)),
        (torch.randn(2, 3, 128, 128), torch.randn(2, 3, 128, 128)),
    )


MODELS["raft"] = raft


def detr():
    """DETR with a small ResNet backbone of transformers' own (no timm, nothing pretrained)."""
    import torch
    from bench_models import import_torchvision_models_if_present, output_module

    import_torchvision_models_if_present()
    transformers = importlib.import_module("transformers")
    backbone = transformers.ResNetConfig(
        embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], out_features=["stage2"], layer_type="basic"
    )
    cfg = transformers.DetrConfig(
        use_timm_backbone=False, backbone_config=backbone, use_pretrained_backbone=False, d_model=32,
        encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=64, decoder_ffn_dim=64, num_queries=8, num_labels=4,
    )  # fmt: skip
    model = transformers.DetrForObjectDetection(cfg)
    return (
        output_module()(model, ("pixel_values",), "logits"),
        (torch.randn(2, 3, 64, 64),),
        (torch.randn(3, 3, 64, 64),),
    )


MODELS["detr"] = detr
MODELS.update(hand_models.MODELS)


def first_tensor(out):
    import torch

    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, dict):
        out = list(out.values())
    for x in out:
        t = first_tensor(x)
        if t is not None:
            return t
    return None


def rel_error(out, want) -> float:
    out, want = first_tensor(out), first_tensor(want)
    want = want.detach().float()
    return (out.detach().cpu().float() - want).abs().max().item() / max(want.abs().max().item(), 1.0)


def host_count() -> dict:
    import torch

    import inductor_plate

    counts = dict(torch.plate.host_ops())
    counts.update({"ind:" + k: v for k, v in inductor_plate.host_fallbacks().items()})
    return {k: v for k, v in counts.items() if v}


def reset_hosts():
    import torch

    import inductor_plate

    torch.plate.reset_host_ops()
    inductor_plate.reset_host_fallbacks()


def graph_count():
    import torch

    c = torch._dynamo.utils.counters
    return sum(c["stats"].values()) and c["stats"].get("unique_graphs", 0), sum(c["graph_break"].values())


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--tests", default="eager,compile")
    args = p.parse_args(argv)
    os.environ.setdefault("PLATE_MACHINE", "plate-mini")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import torch

    import inductor_plate

    torch.manual_seed(0)
    model, inputs, alt = MODELS[args.model]()
    for mod in model.modules():
        if isinstance(mod, torch.nn.Dropout):
            mod.p = 0.0
    model.eval()
    for test in args.tests.split(","):
        torch.manual_seed(0)
        reset_hosts()
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        start = time.perf_counter()
        extra = ""
        try:
            if test in ("eager", "compile", "maxat", "dynamic", "bf16", "bf16c", "autocast"):
                dtype = torch.bfloat16 if test.startswith("bf16") else torch.float32
                cpu = copy.deepcopy(model).to(dtype)
                cin = [x.to(dtype) if x.is_floating_point() else x for x in inputs]

                def cast(device, on=test == "autocast"):
                    return torch.autocast(device, torch.bfloat16, enabled=on)

                with torch.no_grad():
                    with cast("cpu"):
                        want = cpu(*cin)
                    pm = cpu.to("plate")
                    fn = pm
                    if test in ("compile", "bf16c", "autocast"):
                        fn = torch.compile(pm)
                    elif test == "maxat":
                        fn = torch.compile(pm, mode="max-autotune-no-cudagraphs")
                    elif test == "dynamic":
                        fn = torch.compile(pm, dynamic=True)
                    with cast("plate"):
                        out = fn(*[x.to("plate") for x in cin])
                    err = rel_error(out, want)
                    extra = f" scale {first_tensor(want).float().abs().max().item():.1e}"
                    if test == "dynamic":
                        cpu2 = copy.deepcopy(model)
                        want2 = cpu2(*alt)
                        out2 = fn(*[x.to("plate") for x in alt])
                        extra += f" err2 {rel_error(out2, want2):.1e}"
                        with inductor_plate.collect_profiles() as prof:
                            fn(*[x.to("plate") for x in inputs])
                        extra += f" dyn_us {prof.time_ns / 1e3:.1f}"
                    if test in ("compile", "maxat"):
                        with inductor_plate.collect_profiles() as prof:
                            fn(*[x.to("plate") for x in inputs])
                        extra += f" us {prof.time_ns / 1e3:.1f} launches {len(prof.launches)}"
            elif test in ("train", "adamw"):
                cpu = copy.deepcopy(model).train()
                plate = copy.deepcopy(model).train().to("plate")
                with torch.no_grad():
                    shape = first_tensor(cpu(*inputs)).shape
                weights = torch.randn(shape, generator=torch.Generator().manual_seed(1))

                def step(m, opt, w, *xs):
                    out = first_tensor(m(*xs))
                    loss = (out.float() * w).mean()
                    loss.backward()
                    opt.step()
                    opt.zero_grad(set_to_none=False)
                    return loss

                def optimizer(params, adamw=test == "adamw"):
                    if adamw:
                        return torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1)
                    return torch.optim.SGD(params, lr=1e-2)

                want = step(cpu, optimizer(cpu.parameters()), weights, *inputs)
                opt = optimizer(plate.parameters())
                out = torch.compile(step)(plate, opt, weights.to("plate"), *[x.to("plate") for x in inputs])
                err = abs(out.item() - want.item()) / max(abs(want.item()), 1e-12)
                perr = max(
                    ((p.detach().cpu() - q.detach()).abs().max() / max(q.detach().abs().max(), 1e-12)).item()
                    for p, q in zip(plate.parameters(), cpu.parameters(), strict=True)
                )
                extra = f" param_rel_err {perr:.1e}"
            else:
                raise ValueError(test)
            g, b = graph_count() if test not in ("eager", "bf16") else (0, 0)
            print(
                f"RESULT {args.model} {test} err {err:.1e}{extra} graphs {g} breaks {b} host {host_count()} "
                f"wall {time.perf_counter() - start:.1f}",
                flush=True,
            )
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            print(
                f"RESULT {args.model} {test} FAIL {type(e).__name__}: {str(e)[:300]!r} host {host_count()}", flush=True
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
