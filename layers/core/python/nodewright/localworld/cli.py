"""`nodewright localworld up | down | status | schedules | pause | resume | tick`.

`schedules` lists the stack's EventBridge Scheduler schedules as the world runs them (next firing, last result);
`pause` and `resume [--period S]` stop and restart them; `tick` fires them once now and prints what they returned.

Imports stay light here (no boto3, kubernetes or moto) because the top-level CLI imports every
sub-command's module just to build its parser.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(subparsers: Any) -> None:
    """Register the `localworld` sub-command on the top-level CLI."""
    parser = subparsers.add_parser(
        "localworld",
        help="run a local Kubernetes control plane with KWOK nodes and moto as AWS",
        description="Start, inspect or stop the local world (see README, 'The local world').",
    )
    parser.add_argument("action", choices=["up", "down", "status", "schedules", "pause", "resume", "tick"])
    parser.add_argument("--state-dir", type=Path, default=None, help="default: <repo>/.localworld")
    parser.add_argument("--cluster", default=None, help="cluster name and discovery tag value")
    parser.add_argument("--short-waits", action="store_true", help="Wait states and Retry intervals last <= 1 s")
    parser.add_argument(
        "--schedules-paused",
        action="store_true",
        help="start with the stack's EventBridge Scheduler schedules (the planner's tick) paused",
    )
    parser.add_argument(
        "--period", type=float, default=None, help="resume: fire every PERIOD seconds instead of each expression"
    )
    parser.add_argument("--boot-delay", type=float, default=3.0, help="seconds before an instance's node registers")
    parser.add_argument("--timeout", type=float, default=120.0, help="start-up deadline per component (s)")
    parser.add_argument("--cdk-out", type=Path, default=None, help="a synthesized cloud assembly to deploy on up")
    parser.add_argument("--stack", default=None, help="the stack in --cdk-out to deploy")
    parser.add_argument(
        "--bare", action="store_true", help="start the world only, without deploying nodewright into it"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Carry out the requested action; the exit code is 0 on success."""
    from nodewright.localworld import procs, world

    state_dir: Path = args.state_dir or world.state_dir_default()
    if args.action == "up":
        options = world.Options(
            short_waits=args.short_waits,
            schedules_paused=args.schedules_paused,
            boot_delay=args.boot_delay,
            startup_timeout=args.timeout,
        )
        if args.cluster:
            options.cluster = args.cluster
        try:
            state = world.up(state_dir, options)
        except procs.StartupError as exc:
            print(f"local world failed to start: {exc}")
            return 1
        if args.cdk_out is None and not args.bare:
            from nodewright.localworld import deploy

            deploy.deploy(state)
            return 0
        if args.cdk_out is not None:
            if not args.stack:
                print("--cdk-out needs --stack")
                return 2
            outputs = world.deploy_stack(state, args.cdk_out, args.stack)
            for key, value in sorted(outputs.items()):
                print(f"  {args.stack}.{key} = {value}")
        return 0
    if args.action == "down":
        if not world.down(state_dir):
            print("no local world is running")
        return 0
    recorded = world.load_state(state_dir)
    if recorded is None:
        print("no local world")
        return 1
    state = recorded
    if args.action in ("schedules", "pause", "resume", "tick"):
        return _schedules(state, args)
    alive = world.running(state)
    memory = world.resident_memory_kib(state.pids)
    print(f"cluster {state.cluster} ({state.region}); ready in {state.ready_seconds}s at start")
    print(f"  API server   {state.api_server}")
    print(f"  AWS (moto)   {state.endpoint_url}")
    print(f"  kubeconfig   {state.kubeconfig}")
    print(f"  env          {Path(state.state_dir) / 'env'}")
    for name, pid in state.pids.items():
        status = "running" if alive[name] else "DEAD"
        print(f"  {name:<24} pid {pid:<8} {status:<8} {memory[name] / 1024:7.1f} MiB  {state.logs[name]}")
    print(f"  total resident memory {sum(memory.values()) / 1024:.0f} MiB")
    return 0 if all(alive.values()) else 1


def _schedules(state: Any, args: argparse.Namespace) -> int:
    """The schedule actions: each prints the server's JSON answer."""
    import json

    from nodewright.localworld import world

    if args.action == "schedules":
        answer = world.control(state, "schedules", method="GET")
    elif args.action == "pause":
        answer = world.control(state, "schedules/pause", {})
    elif args.action == "resume":
        answer = world.control(state, "schedules/resume", {"period_seconds": args.period})
    else:
        answer = world.control(state, "schedules/tick", {})
    print(json.dumps(answer, indent=2))
    return 0 if all(r.get("ok", True) for r in answer.get("results", [])) else 1
