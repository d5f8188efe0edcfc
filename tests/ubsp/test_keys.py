"""Sealing and opening with an agent's keys (a2a_nb.ubsp.keys), no broker: JWS (ES256) in JWE
(ECDH-ES+A256KW, A256GCM), claims and replay cache. Profile: Untrusted-Broker Security Profile 4-6, 12."""
from __future__ import annotations

import base64
import json
import time

import pytest

from a2a_nb.ubsp.keys import MAX_SEALED_BYTES, AgentKeys, SealError
from a2a_nb.ubsp.trust import KeyTrust, UntrustedKeySource

PAYLOAD = b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}'


@pytest.fixture(scope="module")
def pair():
    return AgentKeys("coordinator"), AgentKeys("analyst")


def opener(pair):
    coordinator, _ = pair
    return lambda who: coordinator.public_jwks()


def test_only_the_recipient_opens_and_gets_the_payload_byte_for_byte(pair):
    coordinator, analyst = pair
    sealed = coordinator.seal(PAYLOAD, "analyst", analyst.public_jwks())
    assert sealed.count(".") == 4 and b"SendMessage" not in sealed.encode()
    header = json.loads(base64.urlsafe_b64decode(sealed.split(".")[0] + "=="))
    assert header == {"alg": "ECDH-ES+A256KW", "enc": "A256GCM", "kid": analyst.encryption_kid, "cty": "JWS",
                      "epk": header["epk"]}
    opened = analyst.open(sealed.encode(), "coordinator", opener(pair), now=time.time())
    assert opened.payload == PAYLOAD and opened.sender == "coordinator" and opened.claims["aud"] == "analyst"
    with pytest.raises(SealError, match="cannot decrypt"):
        AgentKeys("analyst").open(sealed.encode(), "coordinator", opener(pair), now=time.time())


def test_the_same_identity_restarted_refuses_what_was_sealed_before_it_started(pair):
    """Keys loaded again (a restart without its replay memory): a payload issued before the start
    is refused, one issued after is opened (issue 35 item 2; a kept cache: test_replays.py)."""
    coordinator, analyst = pair
    before = coordinator.seal(PAYLOAD, "analyst", analyst.public_jwks()).encode()
    time.sleep(0.01)
    restarted = AgentKeys("analyst", analyst.private_jwks())
    with pytest.raises(SealError, match="before this agent started"):
        restarted.open(before, "coordinator", opener(pair), now=time.time())
    after = coordinator.seal(PAYLOAD, "analyst", analyst.public_jwks()).encode()
    assert restarted.open(after, "coordinator", opener(pair), now=time.time()).payload == PAYLOAD


def test_replayed_expired_misattributed_or_tampered_payloads_are_refused(pair):
    coordinator, analyst = pair
    sealed = coordinator.seal(PAYLOAD, "analyst", analyst.public_jwks()).encode()
    analyst.open(sealed, "coordinator", opener(pair), now=time.time())
    with pytest.raises(SealError, match="replayed"):
        analyst.open(sealed, "coordinator", opener(pair), now=time.time())
    other = coordinator.seal(PAYLOAD, "analyst", analyst.public_jwks()).encode()
    with pytest.raises(SealError, match="expired"):
        AgentKeys("analyst", analyst.private_jwks()).open(other, "coordinator", opener(pair), now=time.time() + 120)
    with pytest.raises(SealError, match="not by mallory"):
        AgentKeys("analyst", analyst.private_jwks()).open(other, "mallory", opener(pair), now=time.time())
    flipped = other[:-8] + (b"A" if other[-8:-7] != b"A" else b"B") + other[-7:]
    with pytest.raises(SealError, match="cannot decrypt"):
        AgentKeys("analyst", analyst.private_jwks()).open(flipped, "coordinator", opener(pair), now=time.time())
    with pytest.raises(SealError, match="above"):
        analyst.open(b"a" * (MAX_SEALED_BYTES + 1), "coordinator", opener(pair), now=time.time())


def test_a_signature_by_another_key_under_the_senders_name_is_refused(pair):
    coordinator, analyst = pair
    impostor = AgentKeys("coordinator")  # the same name, a key of its own (what the broker could make)
    sealed = impostor.seal(PAYLOAD, "analyst", analyst.public_jwks()).encode()
    with pytest.raises(SealError, match="signature of coordinator not valid"):
        analyst.open(sealed, "coordinator", opener(pair), now=time.time())


def test_key_sets_without_the_needed_key_are_named(pair):
    coordinator, analyst = pair
    only_sig = {"keys": [analyst.public_jwks()["keys"][0]]}
    with pytest.raises(SealError, match="no enc key"):
        coordinator.seal(PAYLOAD, "analyst", only_sig)
    with pytest.raises(SealError, match="not a JWK Set"):
        coordinator.seal(PAYLOAD, "analyst", {"keys": "nope"})
    public = coordinator.public_jwks()
    assert all("d" not in k for k in public["keys"]) and {k["use"] for k in public["keys"]} == {"sig", "enc"}


def test_a_recorded_payload_is_read_again_without_replay_or_age_checks_but_with_the_signature(pair):
    coordinator, analyst = pair
    reader = AgentKeys("analyst", analyst.private_jwks())
    sealed = coordinator.seal(PAYLOAD, "analyst", analyst.public_jwks()).encode()
    reader.open(sealed, "coordinator", opener(pair), now=time.time())
    later = time.time() + 3600  # an hour later, already opened once: still readable from a recording
    assert reader.open(sealed, "coordinator", opener(pair), now=later, recorded=True).payload == PAYLOAD
    with pytest.raises(SealError, match="replayed"):
        reader.open(sealed, "coordinator", opener(pair), now=time.time())
    with pytest.raises(SealError, match="not by mallory"):
        reader.open(sealed, "mallory", opener(pair), now=later, recorded=True)


def test_processes_opening_a_fresh_key_home_at_once_all_serve_keys_its_ca_trusts(tmp_path):
    """Two `serve` processes started together used to make two CAs: the second replaced the first's
    files, and the first's key server then served a certificate nobody trusted (ubsp-v1 failed)."""
    import threading

    from a2a_nb.ubsp.local_keys import LocalKeys
    from a2a_nb.ubsp.trust import KeyTrust, fetch_jwks

    homes: list = []
    threads = [threading.Thread(target=lambda: homes.append(LocalKeys(tmp_path))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert len(homes) == 4
        for i, home in enumerate(homes):
            ubsp = home.ubsp("acme", "u", f"agent-{i}")
            on_disk = KeyTrust(allowed_hosts=("127.0.0.1",), ca_file=str(tmp_path / "tls" / "ca.crt"))
            assert fetch_jwks(ubsp.metadata["jwksUri"], on_disk)["keys"], f"process {i}'s key server"
    finally:
        for home in homes:
            home.close()


def test_jwe_headers_are_read_before_decrypting_zip_and_other_algorithms_refused(pair):
    """Compact or JSON serialization: ``zip`` in any header, another alg/enc, a header too long or not
    JSON is refused before the JOSE library sees the payload (issue 35 item 3; the end-to-end bomb:
    test_ubsp_hostile.py)."""
    from a2a_nb.ubsp.keys import jwe_header_problem

    coordinator, analyst = pair

    def b64(obj) -> bytes:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=")

    good = coordinator.seal(PAYLOAD, "analyst", analyst.public_jwks()).encode()
    assert jwe_header_problem(good) is None
    ours = {"alg": "ECDH-ES+A256KW", "enc": "A256GCM"}
    assert "compressed JWE" in jwe_header_problem(b64({**ours, "zip": "DEF"}) + b".a.b.c.d")
    assert "not ECDH-ES+A256KW/A256GCM" in jwe_header_problem(b64({"alg": "dir", "enc": "A256GCM"}) + b".a.b.c.d")
    assert "4 KiB" in jwe_header_problem(b"e" * 5000 + b".a.b.c.d")
    assert "base64url JSON" in jwe_header_problem(b"!!!.a.b.c.d")
    as_json = {"protected": b64(ours).decode(), "unprotected": {"zip": "DEF"}, "ciphertext": "x"}
    assert "compressed JWE" in jwe_header_problem(json.dumps(as_json).encode())
    as_json = {"protected": b64(ours).decode(), "recipients": [{"header": {"zip": "DEF"}}]}
    assert "compressed JWE" in jwe_header_problem(json.dumps(as_json).encode())
    with pytest.raises(SealError, match="compressed JWE"):
        analyst.open(b64({**ours, "zip": "DEF"}) + b".a.b.c.d", "coordinator", opener(pair), now=time.time())


def test_a_peer_key_set_is_parsed_once_and_the_cache_is_bounded(pair, monkeypatch):
    """Issue 40 item 1: no JWKSet.from_json per seal and open; at most MAX_PARSED_SETS kept."""
    from a2a_nb.ubsp import keys as keys_module

    coordinator, analyst = pair
    assert keys_module.parse_key_set(analyst.public_jwks()) is keys_module.parse_key_set(analyst.public_jwks())
    monkeypatch.setattr(keys_module, "MAX_PARSED_SETS", 2)
    for agent in ("x", "y", "z"):
        keys_module.parse_key_set(AgentKeys(agent).public_jwks())
    assert len(keys_module._parsed) == 2
    with pytest.raises(SealError, match="not a JWK Set"):
        keys_module.parse_key_set({"keys": "nope"})


def test_a_trusted_key_set_is_handed_out_parsed_and_shared_and_jwks_for_still_copies(pair):
    """Issue 40 item 1: a seal or open gets its peer's keys from the trust parsed, without a copy of the
    JWK Set per message; ``jwks_for`` (public) still hands out a copy the caller may change."""
    coordinator, analyst = pair
    trust = KeyTrust(trust_inline=True)
    metadata = {"jwks": analyst.public_jwks()}
    first = trust.key_set_for(metadata)
    assert first is trust.key_set_for({"jwks": analyst.public_jwks()})  # by content: parsed once
    sealed = coordinator.seal(b"{}", "analyst", first)
    assert analyst.open(sealed.encode(), "coordinator", lambda who: trust.key_set_for({"jwks": coordinator.public_jwks()}),
                        now=time.time()).payload == b"{}"
    copied = trust.jwks_for(metadata)
    copied["keys"].clear()
    assert metadata["jwks"]["keys"] and trust.key_set_for(metadata) is first
    with pytest.raises(UntrustedKeySource, match="refused key set: not a JWK Set"):
        trust.key_set_for({"jwks": {"keys": [{"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"}]}})
