"""`pip install ./clients/python` into a fresh virtual environment gives a working client: the
package imports with its generated tools, and verifies a receipt with no service at all."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

CLIENT = Path(__file__).resolve().parents[1] / "python"
UV = Path(sys.executable).parent / "uv"  # the Makefile installs it beside python; it installs what pip would

CHECK = textwrap.dedent(
    """
    import base64, hashlib, rfc8785
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    import tollway_client
    from tollway_client import Client, verify_receipt

    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes_raw()
    receipt = {"receipt_id": "rcpt_1", "amount_usdc": "0.005000", "key_id": "rk_test", "alg": "Ed25519"}
    digest = hashlib.sha256(rfc8785.dumps(receipt)).hexdigest()
    signature = base64.urlsafe_b64encode(key.sign(bytes.fromhex(digest))).rstrip(b"=").decode()
    keys = {"keys": [{"key_id": "rk_test", "alg": "Ed25519", "public_key": base64.urlsafe_b64encode(public).rstrip(b"=").decode()}]}
    assert verify_receipt({**receipt, "digest": digest, "signature": signature}, keys)
    assert not verify_receipt({**receipt, "amount_usdc": "0.000001", "digest": digest, "signature": signature}, keys)
    assert hasattr(Client, "vehicle_recalls") and "solve" in tollway_client.TOOLS
    print("ok", tollway_client.__file__)
    """
)


def test_the_python_client_installs_into_a_fresh_venv(tmp_path):
    source = tmp_path / "python"
    shutil.copytree(CLIENT, source, ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", tmp_path / "venv"], check=True)
    python = tmp_path / "venv" / "bin" / "python"
    subprocess.run([UV, "pip", "install", "--quiet", "--python", python, source], check=True, capture_output=True)
    done = subprocess.run([python, "-c", CHECK], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok") and str(tmp_path / "venv") in done.stdout
