"""nodewright: an event-driven, serverless node autoscaler for Amazon EKS."""

__version__ = "0.1.0"
