"""Interruption handling's pure core: EventBridge events -> `Message` -> a `Plan` of actions with reasons.

`messages.parse_event` reads one event (one parser per source and detail-type), `ownership.owned_instances`
maps instance ids to this cluster's NodeClaims and Nodes, and `decide.decide` says what to do about each
instance: the disruption commands to start and the offerings to mark unavailable. No boto3, no clock, no
environment: the service (`nodewright.service.interrupt`) and `nodewright explain-event` supply those.
"""
