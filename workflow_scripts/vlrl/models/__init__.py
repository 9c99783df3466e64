"""Base models: the locally built tiny Qwen2.5-VL and pinned hub downloads.

May import: :mod:`vlrl.core`, :mod:`vlrl.config`, :mod:`vlrl.cluster`.
"""
