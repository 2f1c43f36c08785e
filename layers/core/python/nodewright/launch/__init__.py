"""Pure launch planning: node bootstrap user data, launch templates, CreateFleet requests and their errors.

Nothing here calls AWS: functions take resolved facts (subnets, images, cluster endpoint) and return
the documents the EC2 adapter sends, so every choice is testable without a cloud.
"""
