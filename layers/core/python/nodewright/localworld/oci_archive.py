"""An image archive written without a container engine: the layout `docker save` writes since Docker 25, an OCI
image layout (`oci-layout`, `index.json`, `blobs/sha256/...`) with Docker's `manifest.json` beside it, so
`docker load`, `crane push`, `skopeo copy docker-archive:` and `skopeo copy oci-archive:` all read the same file.

Layers are uncompressed tars (media type `application/vnd.oci.image.layer.v1.tar`): their digest is their diff
ID, which is what `docker save` writes too; a registry push compresses them. Everything is written in a fixed
order with fixed times, so the same layers and config give the same archive, byte for byte.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar"
CONFIG_MEDIA_TYPE = "application/vnd.oci.image.config.v1+json"
MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Layer:
    """An uncompressed layer tar on disk, with its sha256 (its digest and diff ID) and size, and the history line
    that says what made it."""

    path: Path
    digest: str
    size: int
    created_by: str

    @staticmethod
    def of(path: Path, created_by: str) -> Layer:
        sha = hashlib.sha256()
        with path.open("rb") as stream:
            while chunk := stream.read(_CHUNK):
                sha.update(chunk)
        return Layer(path, f"sha256:{sha.hexdigest()}", path.stat().st_size, created_by)


@dataclass(frozen=True)
class ImageConfig:
    """What `docker inspect` shows as the image's Config (the Dockerfile's ENV, USER, EXPOSE, ENTRYPOINT)."""

    architecture: str
    env: Sequence[str]
    user: str
    entrypoint: Sequence[str]
    exposed_ports: Sequence[str] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    working_dir: str = "/"

    def document(self, layers: Sequence[Layer], created: str) -> dict[str, Any]:
        """The OCI image config JSON for these layers, oldest first."""
        return {
            "architecture": self.architecture,
            "os": "linux",
            "created": created,
            "config": {
                "Env": list(self.env),
                "User": self.user,
                "Entrypoint": list(self.entrypoint),
                "ExposedPorts": {port: {} for port in self.exposed_ports},
                "Labels": dict(self.labels),
                "WorkingDir": self.working_dir,
            },
            "rootfs": {"type": "layers", "diff_ids": [layer.digest for layer in layers]},
            "history": [{"created": created, "created_by": layer.created_by} for layer in layers],
        }


@dataclass(frozen=True)
class TreeEntry:
    """One file, directory or symlink of a layer built from a tree (see `write_layer`)."""

    name: str  # path in the image, without the leading slash
    source: Path | None = None  # a regular file's content; None with no `link` means a directory
    link: str = ""  # a symlink's target
    mode: int = 0o644


def write_layer(out: Path, entries: Iterable[TreeEntry], mtime: int) -> None:
    """A layer tar of `entries` owned by root with the given modification time: the same entries always give the
    same bytes (sorted by name, no user names, PAX headers off)."""
    with tarfile.open(out, "w", format=tarfile.GNU_FORMAT) as archive:
        for entry in sorted(entries, key=lambda e: e.name):
            info = tarfile.TarInfo(entry.name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = mtime, 0, 0, "", ""
            if entry.link:
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, entry.link, 0o777
                archive.addfile(info)
            elif entry.source is None:
                info.type, info.mode = tarfile.DIRTYPE, entry.mode
                archive.addfile(info)
            else:
                info.size, info.mode = entry.source.stat().st_size, entry.mode
                with entry.source.open("rb") as stream:
                    archive.addfile(info, stream)


def write_image(out: Path, reference: str, layers: Sequence[Layer], config: ImageConfig, created: str) -> str:
    """Write the archive for `reference` (`name:tag`) to `out`; returns the manifest's digest, which a registry
    reports for the pushed image."""
    config_blob = _json(config.document(layers, created))
    config_digest = _digest(config_blob)
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": {"mediaType": CONFIG_MEDIA_TYPE, "digest": config_digest, "size": len(config_blob)},
        "layers": [{"mediaType": LAYER_MEDIA_TYPE, "digest": la.digest, "size": la.size} for la in layers],
    }
    manifest_blob = _json(manifest)
    manifest_digest = _digest(manifest_blob)
    name, _, tag = reference.rpartition(":")
    index = {
        "schemaVersion": 2,
        "mediaType": INDEX_MEDIA_TYPE,
        "manifests": [
            {
                "mediaType": MANIFEST_MEDIA_TYPE,
                "digest": manifest_digest,
                "size": len(manifest_blob),
                "annotations": {"io.containerd.image.name": reference, "org.opencontainers.image.ref.name": tag},
            }
        ],
    }
    docker_manifest = [
        {"Config": _blob(config_digest), "RepoTags": [reference], "Layers": [_blob(la.digest) for la in layers]}
    ]
    with tarfile.open(out, "w", format=tarfile.GNU_FORMAT) as archive:
        _add_bytes(archive, "oci-layout", _json({"imageLayoutVersion": "1.0.0"}))
        _add_bytes(archive, "index.json", _json(index))
        _add_bytes(archive, "manifest.json", _json(docker_manifest))
        _add_bytes(archive, "repositories", _json({name: {tag: layers[-1].digest.removeprefix("sha256:")}}))
        _add_bytes(archive, _blob(config_digest), config_blob)
        _add_bytes(archive, _blob(manifest_digest), manifest_blob)
        for layer in layers:
            info = _info(_blob(layer.digest), layer.size)
            with layer.path.open("rb") as stream:
                archive.addfile(info, stream)
    return manifest_digest


def _json(document: Any) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def _digest(blob: bytes) -> str:
    return f"sha256:{hashlib.sha256(blob).hexdigest()}"


def _blob(digest: str) -> str:
    return "blobs/sha256/" + digest.removeprefix("sha256:")


def _info(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, 0o644, 0
    return info


def _add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    archive.addfile(_info(name, len(data)), io.BytesIO(data))


def unpack(archive_path: Path, root: Path) -> dict[str, Any]:
    """Apply the image's layers in order under `root` (a fresh directory), as a container runtime lays out its
    filesystem (whiteouts `.wh.<name>` remove what a lower layer wrote), after checking every blob against its
    digest. Returns the image config. Raises ValueError on a digest that does not match."""
    with tarfile.open(archive_path) as archive:
        [entry] = json.loads(_read(archive, "manifest.json"))
        config_blob = _read(archive, entry["Config"])
        config: dict[str, Any] = json.loads(config_blob)
        if _blob(_digest(config_blob)) != entry["Config"]:
            raise ValueError(f"config blob {entry['Config']} does not match its digest")
        for name, diff_id in zip(entry["Layers"], config["rootfs"]["diff_ids"], strict=True):
            data = _read(archive, name)
            if _digest(data) != diff_id or _blob(diff_id) != name:
                raise ValueError(f"layer {name} does not match its diff ID {diff_id}")
            _apply(data, root)
    return config


def _read(archive: tarfile.TarFile, name: str) -> bytes:
    stream = archive.extractfile(name)
    if stream is None:
        raise ValueError(f"{name} is not a file in the archive")
    return stream.read()


def _apply(layer: bytes, root: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        members = tar.getmembers()
        for member in members:
            path = Path(member.name)
            if path.name.startswith(".wh."):
                gone = root / path.parent / path.name.removeprefix(".wh.")
                if gone.is_dir() and not gone.is_symlink():
                    shutil.rmtree(gone)
                else:
                    gone.unlink(missing_ok=True)
        tar.extractall(root, members=[m for m in members if not Path(m.name).name.startswith(".wh.")], filter="tar")
