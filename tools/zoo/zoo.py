"""Model zoo shared by export_models.py and bench_torch.py.

Every model is built with torch.manual_seed(0) immediately before
construction, so the random (not pretrained) weights are identical in every
process that builds it. Batch 1, eval mode.

Source: copied unchanged (except this note) from the seeded model-zoo exporter
(/work/shared/models/{export.py,zoo.py} on the build machines) so that the
repository does not depend on that directory; scripts/export-zoo runs it.
"""
import os

import torch
import torch.nn as nn
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL_DIR = os.path.abspath(os.environ.get("LOOM_MODEL_DIR", "models"))


class BertLikeEncoder(nn.Module):
    """BERT-base-like encoder: token + position embeddings, LayerNorm, then
    12 x nn.TransformerEncoderLayer(d_model 768, 12 heads, ff 3072, GELU,
    post-norm as in BERT). Input int64 token ids [1, 128]; output the last
    hidden state [1, 128, 768]."""

    def __init__(self, vocab=30522, d_model=768, heads=12, layers=12, ff=3072, max_len=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.randn(1, max_len, d_model) * 0.02)
        self.ln = nn.LayerNorm(d_model, eps=1e-12)
        layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.1, activation="gelu",
                                           batch_first=True, layer_norm_eps=1e-12)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        # nn.TransformerEncoder deep-copies one layer, so all 12 layers would
        # start with identical weights (and the ONNX exporter would then
        # de-duplicate them into one shared set). Re-initialise each layer.
        for lyr in self.encoder.layers:
            lyr.self_attn._reset_parameters()
            lyr.self_attn.out_proj.reset_parameters()
            lyr.linear1.reset_parameters()
            lyr.linear2.reset_parameters()

    def forward(self, ids):
        x = self.tok(ids) + self.pos[:, : ids.shape[1]]
        return self.encoder(self.ln(x))


class BidirectionalLstm(nn.Module):
    """A 2-layer bidirectional LSTM over a sequence (batch_first), then a
    linear classifier per step: the recurrent model of the zoo. Input float
    [1, 64, 128]; output [1, 64, 10]."""

    def __init__(self, features=128, hidden=256, layers=2, classes=10):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, num_layers=layers, bidirectional=True, batch_first=True)
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        return self.head(self.lstm(x)[0])


def _tv(name, **kw):
    return lambda: getattr(torchvision.models, name)(weights=None, **kw)


# name -> (constructor, input shape, input dtype)
MODELS = {
    "resnet18": (_tv("resnet18"), (1, 3, 224, 224), "float32"),
    "resnet50": (_tv("resnet50"), (1, 3, 224, 224), "float32"),
    "resnet34": (_tv("resnet34"), (1, 3, 224, 224), "float32"),  # the tuner's transfer benchmark (bench/tune)
    "mobilenet_v2": (_tv("mobilenet_v2"), (1, 3, 224, 224), "float32"),
    "squeezenet1_1": (_tv("squeezenet1_1"), (1, 3, 224, 224), "float32"),
    "densenet121": (_tv("densenet121"), (1, 3, 224, 224), "float32"),
    "efficientnet_b0": (_tv("efficientnet_b0"), (1, 3, 224, 224), "float32"),
    # init_weights=False: PyTorch default init; torchvision's truncnormal(0.1) init makes
    # the random-weight logits explode to ~1e14.
    "inception_v3": (_tv("inception_v3", aux_logits=False, init_weights=False), (1, 3, 299, 299), "float32"),
    "vit_b_16": (_tv("vit_b_16"), (1, 3, 224, 224), "float32"),
    "bert_base_like": (BertLikeEncoder, (1, 128), "int64"),
    "convnext_tiny": (_tv("convnext_tiny"), (1, 3, 224, 224), "float32"),
    "lstm_bidir": (BidirectionalLstm, (1, 64, 128), "float32"),
}


def _randomize_params(model):
    """Give BatchNorm / LayerNorm non-trivial affine parameters and running
    statistics (default init is gamma=1, beta=0, mean=0, var=1, which makes BN
    folding trivial and lets the ONNX exporter de-duplicate all the identical
    folded biases / LN weights into shared initializers + Identity nodes)."""
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, (nn.BatchNorm2d, nn.LayerNorm)):
                if mod.weight is not None:
                    mod.weight.uniform_(0.5, 1.5)
                    mod.bias.normal_(0.0, 0.1)
            if isinstance(mod, nn.BatchNorm2d):
                mod.running_mean.normal_(0.0, 0.1)
                mod.running_var.uniform_(0.5, 1.5)
        # all-zero parameters (zero-initialised biases, ViT's zero-initialised
        # classifier head) -> small random values, as in a trained model.
        for p in model.parameters():
            if not p.any():
                p.normal_(0.0, 0.02)


def build(name):
    ctor = MODELS[name][0]
    torch.manual_seed(0)
    m = ctor()
    _randomize_params(m)
    m.eval()
    return m


def make_input(name):
    """Deterministic random input (seeded per model)."""
    _, shape, dtype = MODELS[name]
    g = torch.Generator().manual_seed(1234)
    if dtype == "int64":
        return torch.randint(0, 30522, shape, generator=g, dtype=torch.int64)
    return torch.randn(shape, generator=g)
