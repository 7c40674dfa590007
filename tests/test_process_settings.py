"""The process-wide memory settings the package makes on import, and that a value the user sets still chooses."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ASK = """
import diagnostics.store, numpy, pyarrow
print(numpy._core.multiarray._get_madvise_hugepage(), pyarrow.default_memory_pool().backend_name)
"""


def _settings(**env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("NUMPY_MADVISE_HUGEPAGE", "ARROW_DEFAULT_MEMORY_POOL")}
    done = subprocess.run([sys.executable, "-c", ASK], env={**clean, **env}, capture_output=True, text=True,
                          check=True)
    return done.stdout.split()


@pytest.mark.skipif(sys.platform != "linux", reason="numpy asks for huge pages on Linux only")
def test_numpy_asks_for_no_huge_pages_unless_the_user_says_so() -> None:
    assert _settings()[0] == "False"
    assert _settings(NUMPY_MADVISE_HUGEPAGE="1")[0] == "True"


def test_arrow_reads_into_the_system_allocator_unless_the_user_chooses_a_pool() -> None:
    import pyarrow as pa

    if "mimalloc" not in pa.supported_memory_backends():  # pragma: no cover - nothing to replace
        pytest.skip("this pyarrow has no mimalloc")
    assert _settings()[1] == "system"
    assert _settings(ARROW_DEFAULT_MEMORY_POOL="mimalloc")[1] == "mimalloc"
