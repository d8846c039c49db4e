"""`tollway receipts verify` prints one line that says what was checked: the receipt,
the key that signed it, and the verdict in words (never `valid: valid`). A real
Ed25519 signature, changed or checked against a key the file does not hold."""

from __future__ import annotations

import json
import os

from tollway._core.receipts.receipt_signing import ReceiptSigner
from tollway._runtime.cli import main as cli


def write_files(tmp_path, receipt: dict, signer: ReceiptSigner):
    receipt_file, keys_file = tmp_path / "receipt.json", tmp_path / "keys.json"
    receipt_file.write_text(json.dumps({"success": True, "data": receipt}))  # as GET /v1/receipts/{id} serves it
    keys_file.write_text(
        json.dumps(
            {
                "keys": [
                    {"key_id": signer.key_id, "alg": "Ed25519", "public_key": signer.public_key_b64url, "active": True}
                ]
            }
        )
    )
    return str(receipt_file), str(keys_file)


def test_the_verdict_is_one_clear_line(tmp_path, capsys) -> None:
    signer = ReceiptSigner(os.urandom(32))
    receipt = signer.sign({"receipt_id": "rcpt_test1", "amount_usdc": "0.005000", "memo": "note"})
    receipt_file, keys_file = write_files(tmp_path, receipt, signer)
    assert cli(["receipts", "verify", receipt_file, "--keys", keys_file]) == 0
    assert (
        capsys.readouterr().out
        == f"valid: receipt rcpt_test1 is signed by key {signer.key_id} and unchanged since it was signed\n"
    )

    receipt_file, keys_file = write_files(tmp_path, {**receipt, "memo": "changed"}, signer)
    assert cli(["receipts", "verify", receipt_file, "--keys", keys_file]) == 1
    assert capsys.readouterr().out == "INVALID: receipt rcpt_test1: digest does not match the receipt's contents\n"

    receipt_file, keys_file = write_files(tmp_path, receipt, ReceiptSigner(os.urandom(32)))
    assert cli(["receipts", "verify", receipt_file, "--keys", keys_file]) == 1
    assert capsys.readouterr().out == f"INVALID: receipt rcpt_test1: unknown key_id {signer.key_id!r}\n"
