"""The moto account the provisioner's handler tests seed is shared by every handler test in this folder."""

from test_provisioner_handler import account  # noqa: F401
