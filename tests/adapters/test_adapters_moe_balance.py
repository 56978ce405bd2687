"""MoE-LoRA load balancing matters: on two input clusters, balancing keeps all experts busy."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from localqwen.adapters import apply_adapter
from localqwen.adapters.router_metrics import expert_load, router_step

DIM, EXPERTS = 16, 8


class OneLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(DIM, DIM)

    def forward(self, x):
        return self.proj(x)


def two_clusters(generator, n=256):
    """Tokens around two centres; each cluster wants a different linear correction."""
    centres = torch.randn(2, DIM, generator=generator) * 3
    labels = torch.randint(0, 2, (n,), generator=generator)
    x = centres[labels] + 0.5 * torch.randn(n, DIM, generator=generator)
    maps = torch.randn(2, DIM, DIM, generator=generator) * 0.3
    return x, labels, maps


def train(balance: str, steps: int = 250) -> dict:
    torch.manual_seed(0)
    base = OneLayer()
    options = {"r": 2, "num_experts": EXPERTS, "top_k": 2, "balance": balance, "target_modules": ["proj"],
               "aux_loss_coef": 2.0, "bias_update_rate": 0.01}
    model = apply_adapter(base, "moe-lora", options).model.train()
    generator = torch.Generator().manual_seed(0)
    x, labels, maps = two_clusters(generator)
    with torch.no_grad():
        target = model.proj.base_layer(x) + torch.einsum("nd,nde->ne", x, maps[labels])
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.02)
    recent = []
    for step in range(steps):
        loss = (model(x) - target).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step >= steps - 30:  # the bias update oscillates around balance: judge the recent average
            recent.append(expert_load(model)["proj"])
        metrics = router_step(model)
    load = torch.tensor(recent).mean(dim=0).tolist()
    return {"load": load, "metrics": metrics, "loss": float(loss.detach())}


def used(load, threshold=0.03):
    return sum(share > threshold for share in load)


def test_without_balancing_experts_collapse():
    result = train("none")
    assert used(result["load"]) <= EXPERTS // 2, result["load"]  # two clusters: half the experts or more idle
    assert result["metrics"]["moe/dead_experts"] >= EXPERTS // 2


@pytest.mark.parametrize("balance", ["aux_loss", "bias"])
def test_balancing_keeps_every_expert_in_use(balance):
    result = train(balance)
    assert used(result["load"]) == EXPERTS, result["load"]
    assert max(result["load"]) < 0.25, result["load"]  # even would be 1/8
    load = torch.tensor(result["load"])
    assert float(-(load * load.log()).sum() / torch.log(torch.tensor(EXPERTS))) > 0.9


def test_aux_loss_reaches_the_router_only_when_selected():
    torch.manual_seed(0)
    x = torch.randn(32, DIM)
    grads = {}
    for balance in ("aux_loss", "none"):
        torch.manual_seed(0)
        model = apply_adapter(OneLayer(), "moe-lora", {"balance": balance, "target_modules": ["proj"]}).model.train()
        model(x).sum().backward()  # lora_B is zero: the task loss gives the router no gradient yet
        grads[balance] = model.proj.router.weight.grad
    assert grads["aux_loss"] is not None and grads["aux_loss"].abs().sum() > 0
    assert grads["none"] is None or grads["none"].abs().sum() == 0


def test_injected_aux_gradient_equals_the_switch_loss_gradient():
    x = torch.randn(64, DIM, generator=torch.Generator().manual_seed(3))
    options = {"num_experts": 4, "top_k": 2, "target_modules": ["proj"], "aux_loss_coef": 0.1}
    routers = {}
    for balance in ("aux_loss", "none"):
        torch.manual_seed(0)
        model = apply_adapter(OneLayer(), "moe-lora", {**options, "balance": balance}).model.train()
        with torch.no_grad():
            model.proj.lora_B.normal_()  # the task loss reaches the router too
        loss = model(x).square().mean()
        if balance == "none":  # the Switch loss written out, differentiated by autograd
            probs = (model.proj.router.weight @ x.t()).softmax(dim=0)
            selected = probs >= probs.topk(2, dim=0).values[-1:]
            load = selected.sum(dim=1) / selected.sum()
            loss = loss + 0.1 * 4 * (load * probs.mean(dim=1)).sum()
        loss.backward()
        routers[balance] = model.proj.router.weight.grad
    torch.testing.assert_close(routers["aux_loss"], routers["none"], atol=1e-6, rtol=1e-5)
