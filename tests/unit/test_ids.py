"""Profile: Identifier Format, Client Session Requirements 3-4, Request/Reply Mapping 5-6."""
import re
import random
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2a_nb.protocol import ids
from a2a_nb.protocol.ids import IdSource, InvalidIdentifier, validate_identifier

ALLOWED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
valid_ids = st.text(alphabet=ALLOWED, min_size=1, max_size=40)


@pytest.mark.parametrize("value", ["acme", "support", "ticket-desk", "a.b_c-D9", ".", "-", "_"])
def test_valid_identifiers_are_returned(value):
    assert validate_identifier(value) == value


@pytest.mark.parametrize(
    "value, bad",
    [("acme corp", "' '"), ("a/b", "'/'"), ("a+b", "'+'"), ("a#", "'#'"), ("über", "'ü'"),
     ("a$b", "'$'"), ("ab\n", "'\\n'")],
)
def test_invalid_identifier_message_names_what_and_chars(value, bad):
    with pytest.raises(InvalidIdentifier) as e:
        validate_identifier(value, "agent_id")
    assert "agent_id" in str(e.value)
    assert bad in str(e.value)
    assert "Identifier Format" in str(e.value)


def test_empty_and_non_string_identifiers_are_rejected():
    with pytest.raises(InvalidIdentifier, match="org_id must not be empty"):
        validate_identifier("", "org_id")
    with pytest.raises(InvalidIdentifier, match="must be a string"):
        validate_identifier(7, "unit_id")  # type: ignore[arg-type]
    assert issubclass(InvalidIdentifier, ValueError)


def test_trailing_newline_is_not_accepted():
    # re.match(r"...$") would accept "acme\n"; the validator must not.
    with pytest.raises(InvalidIdentifier):
        validate_identifier("acme\n")


@given(valid_ids)
def test_property_every_allowed_string_is_valid(s):
    assert validate_identifier(s) == s
    assert ids.IDENTIFIER_RE.fullmatch(s)


@given(st.text(min_size=1, max_size=30))
def test_property_validator_agrees_with_regex(s):
    ok = re.fullmatch(r"[A-Za-z0-9_.-]+", s) is not None
    if ok:
        assert validate_identifier(s) == s
    else:
        with pytest.raises(InvalidIdentifier):
            validate_identifier(s)


@given(valid_ids, valid_ids, valid_ids)
def test_property_client_id_round_trip(org, unit, agent):
    cid = ids.client_id(org, unit, agent)
    assert cid == f"{org}/{unit}/{agent}"
    assert ids.parse_client_id(cid) == (org, unit, agent)


def test_client_id_validates_each_part():
    with pytest.raises(InvalidIdentifier, match="unit_id"):
        ids.client_id("acme", "sup port", "desk")
    with pytest.raises(InvalidIdentifier, match="3 parts"):
        ids.parse_client_id("acme/support")
    with pytest.raises(InvalidIdentifier, match="3 parts"):
        ids.parse_client_id("acme/support/desk/extra")
    with pytest.raises(InvalidIdentifier, match="agent_id"):
        ids.parse_client_id("acme/support/")


def test_is_uuid4_is_strict():
    u = str(uuid.uuid4())
    assert ids.is_uuid4(u)
    assert ids.is_uuid4(u.upper())
    assert not ids.is_uuid4(str(uuid.uuid1()))  # version 1
    assert not ids.is_uuid4(u.replace("-", ""))  # not hyphenated
    assert not ids.is_uuid4("{" + u + "}")
    assert not ids.is_uuid4(u + "\n")
    assert not ids.is_uuid4("12345678-1234-4234-c234-123456789abc")  # variant c
    assert not ids.is_uuid4("12345678-1234-4234-7234-123456789abc")  # variant 7
    assert ids.is_uuid4("12345678-1234-4234-b234-123456789abc")
    assert not ids.is_uuid4(None)
    assert not ids.is_uuid4(uuid.uuid4())  # a UUID object is not the wire string


def test_uuid4_text_is_what_the_uuid_module_makes_of_the_same_bits():
    rng = random.Random(3)
    for bits in [0, 2**128 - 1, *(rng.getrandbits(128) for _ in range(2000))]:
        assert ids.uuid4_text(bits) == str(uuid.UUID(int=bits, version=4))
        assert ids.is_uuid4(ids.uuid4_text(bits))


@pytest.mark.parametrize("seed", [None, 0, 42])
def test_id_source_shapes(seed):
    src = IdSource(seed)
    for make in (src.uuid4, src.task_id, src.context_id, src.jsonrpc_id, src.message_id):
        value = make()
        assert ids.is_uuid4(value), make.__name__
        assert value == value.lower()
    corr = src.correlation()
    assert isinstance(corr, bytes) and re.fullmatch(rb"[0-9a-f]{32}", corr)
    suffix = src.reply_suffix()
    assert re.fullmatch(r"[0-9a-f]{16}", suffix)
    assert validate_identifier(suffix) == suffix


def test_seeded_sources_are_reproducible_and_unseeded_are_not():
    def draw(src):
        return (src.task_id(), src.context_id(), src.message_id("TCK-4821"), src.jsonrpc_id())

    assert draw(IdSource(7)) == draw(IdSource(7))
    assert draw(IdSource(7)) != draw(IdSource(8))
    assert draw(IdSource()) != draw(IdSource())
    assert IdSource(7).seed == 7 and IdSource().seed is None


def test_correlation_and_reply_suffix_ignore_the_seed():
    """The values a requester accepts replies by must never be guessable, seeded source or not."""
    a, b = IdSource(4821), IdSource(4821)
    assert a.task_id() == b.task_id()  # what a lesson displays is reproducible...
    corrs = {IdSource(4821).correlation() for _ in range(50)}
    suffixes = {IdSource(4821).reply_suffix() for _ in range(50)}
    assert len(corrs) == 50 and len(suffixes) == 50  # ...what protects replies is not


def test_message_ids_with_prefix_are_counted_and_unique():
    src = IdSource(1)
    got = [src.message_id("TCK-4821"), src.message_id("TCK-4821"), src.message_id("TCK"),
           src.message_id()]
    assert got[:3] == ["TCK-4821-1", "TCK-4821-2", "TCK-3"]
    assert len(set(got)) == 4
    with pytest.raises(ValueError):
        src.message_id("")


@settings(max_examples=25)
@given(st.integers(min_value=0, max_value=2**32))
def test_property_seeded_ids_are_unique_within_a_source(seed):
    src = IdSource(seed)
    values = [src.task_id() for _ in range(50)] + [src.message_id("m") for _ in range(50)]
    assert len(set(values)) == len(values)
    corrs = {src.correlation() for _ in range(50)}
    assert len(corrs) == 50


def test_correlation_is_utf8_text_with_128_random_bits():
    """Other implementations decode Correlation Data as UTF-8 and fail on arbitrary bytes: the kit
    sends the hex of 16 random bytes, still unguessable."""
    corrs = [IdSource().correlation() for _ in range(200)]
    assert all(c.decode("utf-8") == c.decode("ascii") for c in corrs)
    assert len({bytes.fromhex(c.decode()) for c in corrs}) == 200
    assert {chr(b) for c in corrs for b in c} == set("0123456789abcdef")


def test_readable_correlation_shows_text_as_text_and_bytes_as_hex():
    from a2a_nb.protocol.ids import IdSource, readable_correlation

    kit = IdSource().correlation()
    assert readable_correlation(kit) == kit.decode("ascii")
    assert readable_correlation(b"\x00\xffab") == "0x00ff6162"
    assert readable_correlation(b"two words") == "0x74776f20776f726473"  # a space is not shown as text
    assert readable_correlation(b"") == "0x"


def test_readable_correlation_short_form_for_tables():
    from a2a_nb.protocol.ids import IdSource, readable_correlation

    kit = IdSource().correlation()
    assert len(kit) == 32 and readable_correlation(kit, 16) == kit.decode("ascii")[:16] + "…"
    assert readable_correlation(kit, 32) == kit.decode("ascii")  # fits: nothing cut
    assert readable_correlation(b"\x00\xff", 4) == "0x00…"
