import pytest


@pytest.fixture(autouse=True)
def one_torch_thread():
    """The fits here run tiny chunks, which OpenMP threads only slow down on a busy machine
    (10x measured; see docs/scale.md). Restored after each test."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
