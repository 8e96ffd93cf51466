"""``import zarrdask`` prints nothing, also where numcodecs would warn about the ``crc32c``
package (a venv made by ``pip install .`` alone has no ``google_crc32c``)."""

import subprocess
import sys

import pytest

# numcodecs looks for google_crc32c first; hiding it gives the plain ``pip install .`` venv.
HIDE_GOOGLE_CRC32C = "import sys; sys.modules['google_crc32c'] = None; "


@pytest.mark.parametrize("hide", [HIDE_GOOGLE_CRC32C, ""])
def test_import_prints_nothing(hide):
    code = hide + "import zarrdask, zarrdask.dask_io; import numcodecs; numcodecs.get_codec({'id': 'crc32c'})"
    out = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "" and out.stderr == ""


def test_numcodecs_would_warn_without_the_guard():
    """The guard is needed: importing numcodecs first, with only ``crc32c``, warns."""
    code = HIDE_GOOGLE_CRC32C + "import numcodecs"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "crc32c usage is deprecated" in out.stderr
