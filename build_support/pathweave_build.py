"""The Python package's build backend: maturin's, with the BPF controllers where they build.

``pip install .``, ``pip wheel .`` and ``python -m build`` call these PEP 517 hooks
(pyproject.toml: ``build-backend = "pathweave_build"``, ``backend-path = ["build_support"]``).
Each hands the work to maturin, adding ``--features kernel`` when this machine has the BPF
toolchain, so that the extension carries pathweave-kernel's controllers and ``pathweave
kernel load`` and ``pathweave emulate`` with coupled algorithms work from the installed
package. Without the toolchain the package builds without them and those commands say so.

``PATHWEAVE_BPF`` decides instead of the toolchain check: ``1`` requires the controllers (the
build fails naming what is missing), ``0`` leaves them out. Features given to maturin
(``--config-settings maturin.build-args=...`` or ``MATURIN_PEP517_ARGS``) are left alone.

Run as a script, it says what the build would find (exit 0 with the controllers, 1 without):
``python3 build_support/pathweave_build.py``; the Makefile asks it the same question.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: Debian's packages of the BPF toolchain.
APT_PACKAGES = "clang bpftool libbpf-dev libelf-dev zlib1g-dev pkg-config"
FEATURE = "kernel"
ENV = "PATHWEAVE_BPF"


def _bpftool() -> str | None:
    found = shutil.which("bpftool")
    if found:
        return found
    for p in ("/usr/sbin/bpftool", "/sbin/bpftool"):
        if os.access(p, os.X_OK):
            return p
    return None


def missing() -> list[str]:
    """What the BPF build (crates/pathweave-kernel's build.rs) needs and this machine lacks."""
    if platform.system() != "Linux":
        return [f"Linux (this is {platform.system()})"]
    lacks = []
    if shutil.which("clang") is None:
        lacks.append("clang")
    if _bpftool() is None and not os.environ.get("PATHWEAVE_VMLINUX_H"):
        lacks.append("bpftool")
    for header, package in (
        ("/usr/include/bpf/bpf_helpers.h", "libbpf-dev"),
        ("/usr/include/libelf.h", "libelf-dev"),
        ("/usr/include/zlib.h", "zlib1g-dev"),
    ):
        if not Path(header).is_file():
            lacks.append(f"{header} ({package})")
    if shutil.which("pkg-config") is None:
        lacks.append("pkg-config")
    vmlinux = os.environ.get("PATHWEAVE_VMLINUX_H")
    if vmlinux:
        if not Path(vmlinux).is_file():
            lacks.append(f"PATHWEAVE_VMLINUX_H={vmlinux} (not a file)")
    elif not Path("/sys/kernel/btf/vmlinux").exists():
        lacks.append("the kernel's BTF (/sys/kernel/btf/vmlinux), or PATHWEAVE_VMLINUX_H")
    return lacks


def with_controllers() -> tuple[bool, str]:
    """Whether to build the controllers, and why."""
    choice = os.environ.get(ENV, "auto").strip().lower()
    if choice in ("0", "no", "false"):
        return False, f"{ENV}={choice}"
    lacks = missing()
    if choice in ("1", "yes", "true"):
        if lacks:
            raise RuntimeError(
                f"{ENV}={choice} asks for the BPF controllers, but the build lacks: "
                f"{', '.join(lacks)} (Debian: apt-get install {APT_PACKAGES})"
            )
        return True, f"{ENV}={choice}"
    if choice != "auto":
        raise RuntimeError(f"{ENV}={choice!r} is not allowed: give 1, 0 or auto")
    if lacks:
        return False, f"the BPF toolchain lacks {', '.join(lacks)}"
    return True, "the BPF toolchain is present"


def _maturin() -> Any:
    """maturin's own build backend, imported when a hook runs: the toolchain check that the
    Makefile runs as a script needs only the standard library."""
    import maturin  # type: ignore[import-untyped]

    return maturin


def _settings(config_settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """``config_settings`` with ``--features kernel`` added to maturin's arguments when the
    controllers are to be built and no features were given."""
    maturin = _maturin()
    settings = dict(config_settings or {})
    args = list(maturin.get_maturin_pep517_args(config_settings))
    given = any(a == "--features" or a.startswith("--features=") or a == "-F" for a in args)
    build, why = with_controllers()
    if build and not given:
        args += ["--features", FEATURE]
    if not given:
        state = "with" if build else "without"
        print(f"pathweave: building {state} the BPF controllers ({why})", file=sys.stderr)
    settings["maturin.build-args"] = args
    return settings


def build_wheel(
    wheel_directory: str,
    config_settings: Mapping[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    maturin = _maturin()
    return str(maturin.build_wheel(wheel_directory, _settings(config_settings), metadata_directory))


def build_editable(
    wheel_directory: str,
    config_settings: Mapping[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    maturin = _maturin()
    return str(
        maturin.build_editable(wheel_directory, _settings(config_settings), metadata_directory)
    )


def __getattr__(name: str) -> Any:
    """The other hooks (sdist, metadata, requirements) are maturin's own."""
    if name in (
        "build_sdist",
        "get_requires_for_build_wheel",
        "get_requires_for_build_sdist",
        "get_requires_for_build_editable",
        "prepare_metadata_for_build_wheel",
        "prepare_metadata_for_build_editable",
    ):
        return getattr(_maturin(), name)
    raise AttributeError(name)


if __name__ == "__main__":
    try:
        ok, reason = with_controllers()
    except RuntimeError as e:
        print(f"pathweave_build: {e}", file=sys.stderr)
        sys.exit(2)
    if "--quiet" not in sys.argv[1:]:
        print(f"{'with' if ok else 'without'} the BPF controllers: {reason}")
    sys.exit(0 if ok else 1)
