"""What a warm provisioner container keeps from one batch for the next, besides parses and prepared NodePools.

At 10,000 nodes most of a warm batch was per-node work redone on nodes that had not changed: copying each node
that gets no room (`read.full_nodes`) and registering each as a place pods can go (`scheduling.kept`). Both are
kept here, keyed by the very Node objects they were made from: a Node is the same object only while its
(uid, resourceVersion) is (`model.loader` keeps parses by version and hands a node without pods over as parsed),
so a node that changed, got pods read for it, or was deleted is worked out again or dropped, never reused.
Nothing here decides alone that a node is launched: it only spares recomputing what the batch's own read gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nodewright.model.objects import Node
from nodewright.scheduling.kept import KeptRegistration


@dataclass
class WarmBatch:
    """A warm container's state between batches (see the module doc). `full`: node name -> (the node as read,
    its copy without room); `registration`: the solver's registration of the last batch's nodes."""

    full: dict[str, tuple[Node, Node]] = field(default_factory=dict)
    registration: KeptRegistration = field(default_factory=KeptRegistration)
