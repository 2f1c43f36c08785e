"""The CDK app that deploys nodewright: one stack composed from one construct module per component."""
