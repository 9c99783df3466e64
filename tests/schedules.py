"""transformers' own learning-rate schedules, to check the rates a trainer logged against."""

from __future__ import annotations


def linear_rates(learning_rate: float, planned: int, steps: int) -> list[float]:
    """transformers' own linear schedule of ``planned`` steps: the rate each of the first
    ``steps`` steps trains with (what the trainer logs at that step)."""
    import torch
    from transformers import get_linear_schedule_with_warmup

    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=learning_rate)
    schedule = get_linear_schedule_with_warmup(optimizer, 0, planned)
    rates = []
    for _ in range(steps):
        rates.append(schedule.get_last_lr()[0])
        optimizer.step()
        schedule.step()
    return rates
