"""Scoring: rule scorers per problem type, statistics, and the LLM judge."""
