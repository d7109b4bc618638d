"""GPU tests carry @pytest.mark.gpu and skip without a usable device, with resident's reason.
With RESIDENT_REQUIRE_GPU=1 (as for the C++ suite) they run anyway, and fail without one."""

import pytest

import resident
from resident_test_env import gpu_expected


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device")


def pytest_collection_modifyitems(config, items):
    if resident.device_count() > 0 or gpu_expected():
        return
    skip = pytest.mark.skip(reason="no GPU: " + resident.no_device_reason())
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
