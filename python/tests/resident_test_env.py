"""What the test environment promises. RESIDENT_REQUIRE_GPU (set, non-empty and not "0", as the
C++ suite reads it) says this is the GPU machine: GPU tests and the modules they need (PyTorch,
torchvision) must be there, so a missing one fails instead of skipping."""

import importlib
import os

import pytest


def gpu_expected():
    value = os.environ.get("RESIDENT_REQUIRE_GPU", "")
    return value not in ("", "0")


def import_or_skip(name):
    """The module `name`; without it, a skip, or an ImportError where a GPU is expected."""
    if gpu_expected():
        try:
            return importlib.import_module(name)
        except ImportError as e:
            raise ImportError(f"{name} is needed on the GPU machine (RESIDENT_REQUIRE_GPU is set): "
                              f"{e}") from e
    return pytest.importorskip(name)
