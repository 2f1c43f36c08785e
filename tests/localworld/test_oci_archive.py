"""The image archive writer (nodewright.localworld.oci_archive) and the image config read off the Dockerfile."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from nodewright.localworld.image import image_config
from nodewright.localworld.oci_archive import ImageConfig, Layer, TreeEntry, unpack, write_image, write_layer

CONFIG = ImageConfig("amd64", ["PATH=/usr/bin"], "65532:65532", ["python", "-m", "app"], ["8080/tcp"])


def _layers(tmp_path: Path) -> list[Layer]:
    """Two layers: a base with a file, and a top that adds an executable and a symlink and deletes the file."""
    (tmp_path / "tree").mkdir(parents=True)
    (tmp_path / "tree" / "app.py").write_text("print('v1')\n")
    (tmp_path / "tree" / "old.txt").write_text("from the base\n")
    base = tmp_path / "base.tar"
    write_layer(base, [TreeEntry("app"), TreeEntry("app/old.txt", tmp_path / "tree" / "old.txt")], mtime=7)
    (tmp_path / "tree" / ".wh.old.txt").write_text("")
    top = tmp_path / "top.tar"
    entries = [
        TreeEntry("app"),
        TreeEntry("app/main.py", tmp_path / "tree" / "app.py", mode=0o755),
        TreeEntry("app/.wh.old.txt", tmp_path / "tree" / ".wh.old.txt"),  # deletes the base's file
        TreeEntry("usr/bin/python", link="/usr/bin/python3.11"),
    ]
    write_layer(top, entries, mtime=7)
    return [Layer.of(base, "base"), Layer.of(top, "app")]


def test_the_same_layers_and_config_give_the_same_archive_byte_for_byte(tmp_path: Path) -> None:
    layers = _layers(tmp_path)
    first, second = tmp_path / "1.tar", tmp_path / "2.tar"
    digest = write_image(first, "forwarder:1.0", layers, CONFIG, "2026-01-01T00:00:00Z")
    # Built again elsewhere, later: nothing of the directory or the clock gets in.
    again = _layers(tmp_path / "again")
    assert write_image(second, "forwarder:1.0", again, CONFIG, "2026-01-01T00:00:00Z") == digest
    assert first.read_bytes() == second.read_bytes()


def test_unpacking_applies_the_layers_in_order_with_their_whiteouts(tmp_path: Path) -> None:
    archive, layers = tmp_path / "image.tar", _layers(tmp_path)
    write_image(archive, "forwarder:1.0", layers, CONFIG, "2026-01-01T00:00:00Z")
    root = tmp_path / "root"
    root.mkdir()
    config = unpack(archive, root)
    assert (root / "app" / "main.py").read_text() == "print('v1')\n"
    assert (root / "app" / "main.py").stat().st_mode & 0o777 == 0o755
    assert not (root / "app" / "old.txt").exists() and not (root / "app" / ".wh.old.txt").exists()
    assert (root / "usr" / "bin" / "python").readlink() == Path("/usr/bin/python3.11")
    assert config["config"]["Entrypoint"] == ["python", "-m", "app"]
    assert config["rootfs"]["diff_ids"] == [layer.digest for layer in layers]
    assert [h["created_by"] for h in config["history"]] == ["base", "app"]


def test_a_blob_that_does_not_match_its_digest_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "image.tar"
    layers = _layers(tmp_path)
    write_image(archive, "forwarder:1.0", layers, CONFIG, "2026-01-01T00:00:00Z")
    tampered = tmp_path / "tampered.tar"
    with tarfile.open(archive) as source, tarfile.open(tampered, "w") as out:
        for member in source.getmembers():
            data = source.extractfile(member).read()  # type: ignore[union-attr]
            if member.name.endswith(layers[1].digest.removeprefix("sha256:")):
                data = data.replace(b"v1", b"v2")
            out.addfile(member, io.BytesIO(data))
    with pytest.raises(ValueError, match="does not match its diff ID"):
        unpack(tampered, tmp_path / "root")


def test_the_config_is_the_dockerfiles_last_stage() -> None:
    config = image_config("arm64", "9.9.9").document([], "2026-01-01T00:00:00Z")
    assert config["architecture"] == "arm64" and config["os"] == "linux"
    assert config["config"]["User"] == "65532:65532"
    assert config["config"]["Entrypoint"] == ["python", "-m", "nodewright.forwarder"]
    assert config["config"]["ExposedPorts"] == {"8080/tcp": {}}
    env = config["config"]["Env"]
    assert env[0].startswith("PATH=/usr/local/sbin:/usr/local/bin:") and "PYTHONPATH=/opt/forwarder" in env
    assert config["config"]["Labels"]["org.opencontainers.image.version"] == "9.9.9"
    assert json.dumps(config)  # serialisable as the archive writes it
