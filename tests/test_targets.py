"""Target listing: `lh-workbench targets [--json]` and the `target` command (issue 6)."""
from __future__ import annotations

import json
import subprocess
import sys
import time

from workbench.common import sycl_devices
from workbench.targets import all_targets, get_target


def test_targets_json_lists_every_target_with_a_reason():
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "workbench.cli", "targets", "--json"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    listing = json.loads(out.stdout)
    names = [t["name"] for t in listing]
    assert {"cpu", "sycl", "xegpu"} <= set(names) and names == sorted(names)
    for t in listing:
        assert set(t) - {"machine", "parallel_runtime"} == {"name", "can_run", "reason"} and isinstance(t["can_run"], bool) and t["reason"]
        # a target with a CPU machine model says what runs its parallel loops
        assert ("machine" in t) == ("parallel_runtime" in t), t
        assert t.get("parallel_runtime", "libgomp") in ("libgomp", "async runtime"), t
    by = {t["name"]: t for t in listing}
    assert by["cpu"]["can_run"] is True
    # sycl and xegpu agree with the targets' own answers (one cached device probe)
    for name in ("sycl", "xegpu"):
        assert (by[name]["can_run"], by[name]["reason"]) == get_target(name).can_run()
    if not sycl_devices.dpctl_installed():
        assert "dpctl is not installed" in by["sycl"]["reason"]
    elif not by["xegpu"]["can_run"]:
        assert by["xegpu"]["reason"].startswith("no Intel GPU SYCL device (dpctl.get_devices(device_type='gpu')")
        assert "backends: " in by["xegpu"]["reason"]
    assert time.monotonic() - t0 < 60


def test_device_probe_never_hangs_the_listing():
    probe = sycl_devices.probe_devices.__wrapped__(timeout=0.001)
    assert probe["ok"] is False and probe["devices"] == []
    assert ("timed out after 0.001 s" in probe["error"]) or ("dpctl is not installed" in probe["error"])


def test_target_command_lists_the_same(tmp_path, monkeypatch):
    monkeypatch.setenv("LH_WORKBENCH_STATE_DIR", str(tmp_path))
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    s = Session()
    try:
        res = default_registry().dispatch("target", CommandContext(s, default_registry()))
        assert res.ok
        listing = {t["name"]: t for t in res.data["targets"]}
        assert set(listing) == {t.name for t in all_targets()}
        for t in all_targets():
            assert listing[t.name]["can_run"] == t.can_run()[0]
    finally:
        s.close()


def test_gpu_names_the_cuda_target_and_the_session_records_cuda(tmp_path, monkeypatch):
    monkeypatch.setenv("LH_WORKBENCH_STATE_DIR", str(tmp_path))
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    assert get_target("gpu") is get_target("cuda")
    s = Session()
    try:
        ctx = CommandContext(s, default_registry())
        res = ctx.registry.dispatch("target gpu", ctx)
        assert res.ok and res.data["target"] == "cuda" and s.target_name == "cuda"
        wrong = ctx.registry.dispatch("target gpuu", ctx)
        assert not wrong.ok and "did you mean" in wrong.error and s.target_name == "cuda"
    finally:
        s.close()
