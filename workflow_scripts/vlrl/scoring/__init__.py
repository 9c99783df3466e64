"""Scoring: rule scorers per problem type, statistics, and the LLM judge.

May import: :mod:`vlrl.core`, :mod:`vlrl.config`, :mod:`vlrl.items`, :mod:`vlrl.endpoints`,
:mod:`vlrl.serving`.
"""
