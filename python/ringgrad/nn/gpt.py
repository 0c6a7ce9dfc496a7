"""GPT and GPTConfig: nanoGPT's model in Python over ringgrad's layers, with nanoGPT's (and
rgtrain's) parameter names, so rgtrain's checkpoints load into it (load_state_dict) and its
state dicts into rgtrain (--init). The same ops as the C++ nn::GPT: token and position
embeddings, blocks of layer norm -> fused causal attention of the packed q, k, v projection ->
projection, layer norm -> MLP (GELU) -> projection, each added to the residual stream, a final
layer norm, and the output layer tied to the token embedding. Initialized as nanoGPT: weights
N(0, 0.02), the residual projections N(0, 0.02 / sqrt(2 n_layer)), biases 0."""
from dataclasses import dataclass

import numpy as np

from ringgrad import _C
from ringgrad.nn import functional as F
from ringgrad.nn.layers import GELU, Embedding, LayerNorm, Linear, ModuleList
from ringgrad.nn.module import Module


@dataclass
class GPTConfig:
    vocab_size: int = 50304
    block_size: int = 1024
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    bias: bool = True
    gelu_approximate: str = "none"  # "tanh": GPT-2's gelu_new
    dtype: object = _C.dtype.float32


class CausalSelfAttention(Module):
    def __init__(self, c):
        super().__init__()
        self.n_head = c.n_head
        self.c_attn = Linear(c.n_embd, 3 * c.n_embd, bias=c.bias, dtype=c.dtype)
        self.c_proj = Linear(c.n_embd, c.n_embd, bias=c.bias, dtype=c.dtype)

    def forward(self, x):
        return self.c_proj(F.packed_qkv_attention(self.c_attn(x), self.n_head, True))


class MLP(Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = Linear(c.n_embd, 4 * c.n_embd, bias=c.bias, dtype=c.dtype)
        self.gelu = GELU(c.gelu_approximate)
        self.c_proj = Linear(4 * c.n_embd, c.n_embd, bias=c.bias, dtype=c.dtype)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = LayerNorm(c.n_embd, 1e-5, bias=c.bias, dtype=c.dtype)
        self.attn = CausalSelfAttention(c)
        self.ln_2 = LayerNorm(c.n_embd, 1e-5, bias=c.bias, dtype=c.dtype)
        self.mlp = MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class _Transformer(Module):
    def __init__(self, c):
        super().__init__()
        self.wte = Embedding(c.vocab_size, c.n_embd, c.dtype)
        self.wpe = Embedding(c.block_size, c.n_embd, c.dtype)
        self.h = ModuleList([Block(c) for _ in range(c.n_layer)])
        self.ln_f = LayerNorm(c.n_embd, 1e-5, bias=c.bias, dtype=c.dtype)


class GPT(Module):
    def __init__(self, config, seed=1337):
        super().__init__()
        self.config = config
        self.transformer = _Transformer(config)
        self.lm_head = Linear(config.n_embd, config.vocab_size, bias=False, dtype=config.dtype)
        self.lm_head.weight = self.transformer.wte.weight  # tied, as nanoGPT
        object.__setattr__(self, "_positions", _C.arange(0, config.block_size, 1,
                                                         _C.dtype.int64))
        self._init_weights(seed)

    def _init_weights(self, seed):
        data = np.random.default_rng(seed)
        proj_std = 0.02 / (2 * self.config.n_layer) ** 0.5
        for name, p in self.named_parameters():
            values = p.detach().numpy()
            module = name.rsplit(".", 2)[-2]
            if module.startswith("ln"):
                continue  # layer norms keep ones and zeros
            if name.endswith("bias"):
                values[...] = 0
            else:
                std = proj_std if name.endswith("c_proj.weight") else 0.02
                values[...] = data.normal(0, std, values.shape)

    def forward(self, idx, targets=None):
        """Logits [B, T, vocab] for token ids idx [B, T]; with targets, also their mean
        cross-entropy (logits, loss), as nanoGPT's forward."""
        t = idx.shape[-1]
        if t > self.config.block_size:
            raise ValueError(f"GPT: sequence length {t} exceeds block_size "
                             f"{self.config.block_size}")
        x = self.transformer.wte(idx) + self.transformer.wpe(self._positions.narrow(0, 0, t))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        if targets is None:
            return logits
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss
