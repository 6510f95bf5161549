"""Powertools Logger, Tracer and Metrics configured from the function's environment."""

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger()
tracer = Tracer()
metrics = Metrics()
