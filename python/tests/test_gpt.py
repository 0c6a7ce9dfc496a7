"""rg.nn.GPT: nanoGPT's model from Python. It takes rgtrain's checkpoints (the same names and
shapes, the tied output layer), counts the tied weight once, and learns."""
import os
import subprocess

import numpy as np
import pytest

import ringgrad as rg
from ringgrad import nn

BUILD = os.environ.get("RG_BUILD_ROOT")


@pytest.mark.skipif(not BUILD, reason="RG_BUILD_ROOT (rgtrain's build) is not set")
def test_an_rgtrain_checkpoint_loads_into_the_python_gpt(tmp_path):
    subprocess.run([os.path.join(BUILD, "apps", "rgtrain"), "--layers", "2", "--heads", "2",
                    "--width", "16", "--digits", "1", "--global-batch", "8", "--micro-batch", "8",
                    "--eval-every", "0", "--steps", "2", "--threads", "1", "--checkpoint",
                    str(tmp_path)], check=True, capture_output=True)
    saved = {name: t for name, t in rg.load(tmp_path / "ckpt.safetensors").items()
             if not name.startswith("optim.")}
    model = nn.GPT(nn.GPTConfig(vocab_size=12, block_size=5, n_layer=2, n_head=2, n_embd=16))
    assert set(model.state_dict()) == set(saved)
    model.load_state_dict(saved)  # strict: every name and shape matches
    for name, t in model.state_dict().items():
        assert np.array_equal(t.numpy(), saved[name].numpy()), name
    assert model.lm_head.weight is model.transformer.wte.weight
    logits = model(rg.tensor([[1, 2, 3, 4]]))
    assert logits.shape == (1, 4, 12)


def test_the_tied_weight_is_one_parameter_and_the_model_learns():
    config = nn.GPTConfig(vocab_size=20, block_size=8, n_layer=1, n_head=2, n_embd=16)
    model = nn.GPT(config)
    names = [name for name, _ in model.named_parameters()]
    assert "lm_head.weight" not in names and "transformer.wte.weight" in names
    assert len(names) == len(list(model.named_parameters(remove_duplicate=False))) - 1
    optimizer = rg.optim.AdamW(model.parameters(), lr=1e-2)
    x = rg.tensor([[1, 5, 7, 3, 2, 9, 4, 6]])
    y = rg.tensor([[5, 7, 3, 2, 9, 4, 6, 1]])
    first = None
    for _ in range(40):
        _, loss = model(x, y)
        first = first if first is not None else loss.item()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    assert loss.item() < 0.3 * first
    with pytest.raises(ValueError, match="exceeds block_size"):
        model(rg.tensor([[1] * 9]))
