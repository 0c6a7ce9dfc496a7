# %% [markdown]
# # Training a GPT to add, from Python
#
# A notebook in a `.py` file (the `# %%` cells run one by one in VS Code or Jupyter, or all at
# once with `python examples/python/tutorial.py [STEPS]`). It trains ringgrad's GPT on
# two-digit additions written as text, "12+34=46", and plots the loss with matplotlib where
# it is installed. Everything below the Python is ringgrad's C++: the ops, autograd, AdamW.

# %%
import sys

import numpy as np

import ringgrad as rg
from ringgrad import nn

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 300
rg.manual_seed(0)

# %% [markdown]
# ## The data: additions as characters
# The vocabulary is the ten digits, "+" and "="; a sample is "a+b=" followed by the sum, all
# padded to the same width. The model learns to predict each next character; only the
# characters of the sum count in the loss (the others get the ignored target -100).

# %%
VOCAB = "0123456789+="
DIGITS = 2
WIDTH = 2 * DIGITS + 2 + DIGITS + 1  # "ab+cd=" then the sum's DIGITS + 1 digits


def encode(text):
    return [VOCAB.index(c) for c in text]


def batch(rng, size):
    a, b = rng.integers(0, 10 ** DIGITS, (2, size))
    texts = [f"{x:0{DIGITS}d}+{y:0{DIGITS}d}={x + y:0{DIGITS + 1}d}" for x, y in zip(a, b)]
    tokens = np.array([encode(t) for t in texts])
    inputs, targets = tokens[:, :-1], tokens[:, 1:].copy()
    targets[:, :2 * DIGITS + 1] = -100  # predict only the sum's digits
    return rg.tensor(inputs.tolist()), rg.tensor(targets.tolist())


# %% [markdown]
# ## The model and the training loop
# `rg.nn.GPT` is nanoGPT's model (the same parameter names, so rgtrain's checkpoints load
# into it). The loop is PyTorch's: forward, loss, backward, step, zero_grad.

# %%
config = nn.GPTConfig(vocab_size=len(VOCAB), block_size=WIDTH - 1, n_layer=2, n_head=4,
                      n_embd=64)
model = nn.GPT(config)
optimizer = rg.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
schedule = rg.optim.lr_scheduler.cosine_with_warmup(optimizer, warmup_steps=STEPS // 10,
                                                    total_steps=STEPS)
rng = np.random.default_rng(0)
losses = []
for step in range(STEPS):
    x, y = batch(rng, 64)
    logits = model(x)
    loss = nn.functional.cross_entropy(logits.reshape(-1, len(VOCAB)), y.reshape(-1))
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad()
    schedule.step()
    losses.append(loss.item())
    if step % 50 == 0 or step == STEPS - 1:
        print(f"step {step:4d}  loss {losses[-1]:.4f}")

# %% [markdown]
# ## Does it add?
# Greedy decoding: feed "ab+cd=", take the most likely next character, append, repeat.

# %%
def add(a, b):
    tokens = encode(f"{a:0{DIGITS}d}+{b:0{DIGITS}d}=")
    with rg.no_grad():
        for _ in range(DIGITS + 1):
            logits = model(rg.tensor([tokens]))
            tokens.append(int(logits[0, -1].numpy().argmax()))
    return "".join(VOCAB[t] for t in tokens[-(DIGITS + 1):])


right = sum(int(add(a, b)) == a + b for a, b in rng.integers(0, 10 ** DIGITS, (100, 2)))
print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}; {right} of 100 additions right")

# %% [markdown]
# ## The loss curve

# %%
try:
    import matplotlib.pyplot as plt
except ImportError:
    print("(matplotlib is not installed: no plot)")
else:
    plt.plot(losses)
    plt.xlabel("step")
    plt.ylabel("loss")
    plt.yscale("log")
    plt.title("GPT learning to add")
    plt.savefig("tutorial_loss.png")
    print("wrote tutorial_loss.png")
