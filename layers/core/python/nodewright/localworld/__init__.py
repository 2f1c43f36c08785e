"""The local world: a real Kubernetes control plane with KWOK nodes, moto as AWS, and Step Functions
running nodewright's handlers in-process. See README.md, "The local world"."""
