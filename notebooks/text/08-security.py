# ---
# jupyter:
#   jupytext:
#     formats: ipynb,text//py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 08 · Security: who may connect, and who may ask
#
# Until now the story ran on an open broker: any client could connect, read every reply and publish
# any card. Ticket TCK-4821 names a customer and their orders, so in production two locks guard it.
# The **broker** lets in only known agents, over TLS, and lets each one use only its own topics. The
# **ticket desk** processes a request only if it carries an access token (a JWT from the company's
# authorization server) that grants the right scope to call the desk. This lesson builds both locks
# on a Mosquitto of its own and tries to get past each of them.
#
# ## What you will learn
# - why logging in to the broker and carrying a [bearer token](glossary.md#Bearer-token) on each
#   request are two separate checks, and why the profile asks for both;
# - a secured Mosquitto: a TLS listener with a generated CA, one password per agent, and topic rights
#   (ACL) derived from each agent's identity;
# - what an intruder holding another agent's valid password can and cannot do;
# - how the desk's [Agent Card](glossary.md#Agent-Card) asks for a token: `securitySchemes` and
#   `securityRequirements` with OAuth scopes;
# - the token's trip: issued as a JWT, sent in the [user property](glossary.md#User-property)
#   `a2a-authorization` over TLS, checked by the desk (signature, `exp`, `iss`, `aud`, scopes)
#   before any processing, and refused with an error that says which check failed;
# - how to tell who refused you: the broker (a [CONNACK](glossary.md#CONNACK-reason-codes) or
#   [PUBACK](glossary.md#PUBACK-reason-codes) reason code), the desk (a JSON-RPC error), or the kit
#   itself, before anything was sent;
# - two rules about the token itself: it never travels over plain MQTT, and it never comes back in
#   a reply (a recording shows it as `[redacted]`).
#
# ## Time needed
# About 30 minutes (75 cells). Run All takes under 3 seconds.
#
# ## Prerequisites
# - [01 · Discovery](01-discovery.ipynb): Agent Cards, and the security fields of a card.
# - [02 · Send and track](02-send-and-track.ipynb): requests, replies and
#   [Correlation Data](glossary.md#Correlation-Data).
# - Helpful, not required: TLS encrypts a connection and proves the server's identity with a
#   certificate signed by a certificate authority (CA) the client trusts; a JWT is a signed JSON
#   document (header, claims, signature) that anyone holding the signer's public key can check.

# %% [markdown]
# ## Step 1. Two locks, two questions
#
# | | broker login | bearer token |
# |---|---|---|
# | question it answers | *may this client connect, and which topics may it use?* | *may this request be processed by this agent?* |
# | who checks | the broker: at CONNECT, at every publish and every delivery | the responder (the desk): on every request, before processing |
# | what proves it | username and password over TLS (or a client certificate) | a JWT signed by an authorization server the desk trusts |
# | what it says | "this connection is the coordinator" | "the coordinator may analyse tickets at the desk, for the next 5 minutes" |
# | who grants it | the broker's administrator (password file, ACL) | the authorization server (OAuth 2.0 / OIDC), out of band |
# | failure looks like | [CONNACK](glossary.md#CONNACK-reason-codes) or [PUBACK](glossary.md#PUBACK-reason-codes) 135 *Not authorized*, or nothing delivered | a JSON-RPC error reply: `UNAUTHENTICATED` or `PERMISSION_DENIED` |
#
# The profile (*OAuth 2.0 and OIDC over MQTT User Properties*, rule 3) says broker authentication
# **must not** be treated as a replacement for the token. The broker knows *who is connected*; it
# cannot know what that agent was allowed to do, for whom, and until when. And a broker on which
# agents ask each other things must let every agent write to every request topic: the login alone
# cannot keep a known-but-unwelcome agent away from the desk. You will see exactly that in step 6.
#
# The tools of this lesson:

# %%
import json

import jwt                      # PyJWT, only to look inside a token
import pandas as pd

import a2a_nb
from a2a_nb import (A2AError, Discovery, Recorder, Requester, Responder, ResponderOptions, RetryProfile, Session,
                    SessionError, as_described, said)
from a2a_nb.agents.auth import BearerPolicy, LocalIssuer, auth_reason, required_scopes_from_card
from a2a_nb.mqtt.secure import SecureBroker
from a2a_nb.protocol import IdSource, MqttMessage, cards, encode_json, errors, jsonrpc, properties, states, topics
from a2a_nb.story.cast import desk_card
from a2a_nb.story.scenarios import TICKET_TEXT

pd.set_option("display.max_colwidth", 100)
pd.set_option("display.html.use_mathjax", False)  # a topic starts with $: a table shows it as text, not math
QUICK = RetryProfile(reply_first_timeout_s=2.0, stream_idle_timeout_s=2.0, max_attempts=1, backoff_s=(0.1,))
print("ready")

# %% [markdown]
# ## Step 2. A secured broker of our own
#
# `SecureBroker` starts a private Mosquitto (on a free port of `127.0.0.1`) with:
#
# - a **TLS listener only**: a throw-away certificate authority and a server certificate it signed
#   are generated in the broker's folder; clients trust that CA (`ca.crt`), and there is no
#   plain-MQTT listener at all;
# - a **password file**: one random password per agent, stored as a salted PBKDF2 hash;
# - `use_username_as_clientid`: the broker replaces whatever Client ID a client sends with its
#   username, `{org}/{unit}/{agent}`, so the Client ID the profile asks for is proven by the password;
# - an **ACL** (access control list) that gives each agent rights derived from that identity.
#
# Our cast gets accounts: the coordinator, the desk, a discovery client, and `echo` (whose password
# will be stolen in step 6). The `recorder` account is an *observer*: it may read all of `$a2a/#`.

# %%
broker = SecureBroker(cast=("coordinator", "discovery", "echo", "ticket-desk"), pools={},
                      observers=("recorder",)).start()
print("listening with TLS:", broker.endpoint.tls)
print("accounts:", ", ".join(broker.users))

# %% [markdown]
# Here is the ACL, as Mosquitto reads it. In a `pattern` line `%u` stands for the username of the
# client being checked, so one line gives every agent the same right *on its own topics*; a `user`
# block lists the rights of one account on anybody's topics.

# %%
print(broker.files["acl"].read_text())

# %% [markdown]
# Read it as a table of who may do what:
#
# - **read** only your *own* request topic (`$a2a/v1/request/%u`) and your *own* reply topics
#   (`$a2a/v1/reply/%u/#`): nobody else gets your requests, replies, or the tokens in them;
# - **write** only your *own* card (`$a2a/v1/discovery/%u`); read everybody's cards;
# - **write** any request topic and any reply topic: every agent must be able to ask every agent,
#   and a responder must be able to answer any [Response Topic](glossary.md#Response-Topic) it is given;
# - the observer (`recorder`) may read everything, and publish nothing beyond what every agent may.
#
# The passwords stay with the `SecureBroker` object: `broker.credentials(agent)` hands an agent its
# endpoint (TLS, CA file, username, password). What the broker's folder holds (certificates, password
# hashes, the configuration) is in [the secure broker's page](../docs/secure-broker.md).
#
# The front door. Two clients try to connect, and both get as far as the broker: one without a
# password, one with the coordinator's username and a guessed password. MQTT v5 has two CONNACK
# reason codes for a refused login, 134 *Bad user name or password* and 135 *Not authorized*.
# Mosquitto 2.0.11 sends 135 to both: it does not tell a stranger which half of the login was wrong.
# A `SessionError` keeps the broker's code in `reason_code`, and the broker's log counts the attempts:

# %%
from paho.mqtt.packettypes import PacketTypes     # the MQTT v5 tables of reason codes, to name a code
from paho.mqtt.reasoncodes import ReasonCode

def connack_name(code):
    return ReasonCode(PacketTypes.CONNACK, identifier=code).getName()

def attempts_logged():
    return broker.log_text().count("New connection from")   # one line per connection the broker accepts

coordinator_login = broker.credentials("coordinator")
wrong_password = coordinator_login.with_credentials(coordinator_login.username, "guess")
before = attempts_logged()
front_door = {}
for who, agent, endpoint in [("no password", "visitor", broker.endpoint),
                             ("a wrong password", "coordinator", wrong_password)]:
    try:
        Session("acme", "support", agent, broker=endpoint)
    except SessionError as exc:
        front_door[who] = exc
        print(f"{who:17} -> refused by the broker: CONNACK {exc.reason_code} {connack_name(exc.reason_code)}")
broker_saw = attempts_logged() - before
print("connection attempts in the broker's log:", broker_saw)

# %%
as_described(
    said("Two clients try to connect", len(front_door), 2),
    said("134 Bad user name or password", connack_name(134), "Bad user name or password"),
    said("135 Not authorized", connack_name(135), "Not authorized"),
    said("Mosquitto 2.0.11 sends 135 to both", sorted(e.reason_code for e in front_door.values()), [135, 135]),
    said("the broker's log counts the attempts", broker_saw, len(front_door)),
)

# %% [markdown]
# A third refusal comes from the kit, before any packet leaves. This broker renames every client
# after its login (`use_username_as_clientid`), so a program that logs in with the coordinator's
# password but calls itself `visitor` would be connected as the coordinator, with the coordinator's
# rights, and nothing addressed to `visitor` would ever reach it. `Session` stops that mix-up at
# once and says why. No broker answered, so the error has no reason code (`reason_code` is None), and
# the broker's log counts no new attempt:

# %%
before = attempts_logged()
try:
    Session("acme", "support", "visitor", broker=coordinator_login)
except SessionError as exc:
    kit_refusal = exc
    print("refused by the kit:", exc)
print("reason code:", kit_refusal.reason_code, "| new attempts in the broker's log:", attempts_logged() - before)

# %%
as_described(
    said("reason_code is None", kit_refusal.reason_code, None),
    said("the broker's log counts no new attempt", attempts_logged() - before, 0),
)

# %% [markdown]
# Before anything else happens, the recorder (with the observer account) starts listening to all of
# `$a2a/#`; step 9 looks at what it saw.

# %%
recorder = Recorder(broker.credentials("recorder"), agent="recorder").start()
print(recorder.filter, "recording:", recorder.running)

# %% [markdown]
# ## Step 3. The desk's card asks for a token
#
# The desk's card is lesson 01's card plus two fields. `securitySchemes` declares *how* to get a
# token: here OAuth 2.0 with the client-credentials flow at ACME's token endpoint, and the scopes
# that endpoint can grant. `securityRequirements` says *what the desk demands*: a token from that
# scheme holding the scope `tickets.analyze`.

# %%
plain_card = desk_card()
card = cards.agent_card(
    name=plain_card["name"], description=plain_card["description"], version="1.0.0",
    org="acme", unit="support", agent="ticket-desk", skills=plain_card["skills"], streaming=True,
    provider=plain_card["provider"],
    security_schemes={"acme-oauth": cards.oauth2_scheme(
        "https://auth.acme.example/oauth2/token",
        {"tickets.analyze": "Analyse support tickets", "tickets.read": "Read support tickets"},
        description="ACME identity provider (client credentials)")},
    security_requirements=[cards.requirement("acme-oauth", ["tickets.analyze"])],
)
print(json.dumps({k: card[k] for k in ("securitySchemes", "securityRequirements")}, indent=2))

# %%
as_described(
    said("The desk's card is lesson 01's card", all(card[k] == v for k, v in plain_card.items()), True),
    said("plus two fields", sorted(set(card) - set(plain_card)), ["securityRequirements", "securitySchemes"]),
    said("holding the scope tickets.analyze", [sorted(s) for s in required_scopes_from_card(card)], [["tickets.analyze"]]),
)

# %% [markdown]
# The desk turns its own card into its token policy: `BearerPolicy.from_card` takes the required
# scopes from `securityRequirements`. It adds what the card does not say: which issuer the desk
# trusts (`iss`), which audience a token must name (`aud`: the desk itself), and the issuer's public
# key to check signatures with. The authorization server is `LocalIssuer`, a stand-in that signs
# ES256 JWTs with a key it generates (in real life: your identity provider, whose keys the desk
# would fetch from its JWKS endpoint).

# %%
issuer = LocalIssuer(issuer="https://auth.acme.example", kid="acme-signing-1")
DESK = "acme/support/ticket-desk"
policy = BearerPolicy.from_card(card, issuer=issuer.issuer, audience=DESK, key=issuer.public_key)

def analyse(ctx):
    return "TCK-4821: the order-status cache is not invalidated after checkout"

desk = Responder("ticket-desk", analyse, card=card, broker=broker.credentials("ticket-desk"), auth=policy,
                 options=ResponderOptions(ids=IdSource(seed=4821)))
print(desk)
print("trusts issuer:", policy.issuer, "| audience:", policy.audience,
      "| scope sets:", [sorted(s) for s in policy.scope_sets])

# %% [markdown]
# The coordinator finds the card as in lesson 01, and reads from it which scopes to ask for:

# %%
disco = Discovery(agent="discovery", broker=broker.credentials("discovery"))
found = disco.wait_for("ticket-desk", status="online").card
print("found by skill tag:", [e.agent for e in disco.find(tags=["root-cause-analysis"])])
print("required scopes:   ", [sorted(s) for s in required_scopes_from_card(found)])
for held in ([], ["acme-oauth"]):
    print(f"usable holding {held!s:14} ->", cards.card_matches(found, tags=["ticket"], schemes=held))

# %% [markdown]
# ## Step 4. A token from the authorization server
#
# Getting the token is out of band (profile rule 1): the coordinator asks the authorization server,
# over HTTPS, for a token for the audience `acme/support/ticket-desk` with the scope the card named.
# Here `issuer.token(...)` plays that part. The token is a JWT: three base64url parts, header, claims,
# signature. Anyone can *read* the first two (we do, below, without checking anything); only the
# issuer's private key can *make* a signature that the public key verifies.

# %%
token = issuer.token(DESK, ["tickets.analyze", "tickets.read"], subject="acme/support/coordinator",
                     lifetime_s=300)
claims = jwt.decode(token, options={"verify_signature": False})

print("parts:  ", token.count(".") + 1)
print("header: ", jwt.get_unverified_header(token))
print("claims: ", {k: v for k, v in claims.items() if k not in ("iat", "exp", "jti")})
print("valid for", claims["exp"] - claims["iat"], "s after iat; jti (a unique token id):", len(claims["jti"]), "hex digits")

# %%
import base64

def readable(part):
    """A part of the token decoded as JSON, or None (the signature is bytes, not JSON)."""
    try:
        return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except ValueError:
        return None

parts = token.split(".")
as_described(
    said("three base64url parts", len(parts), 3),
    said("Anyone can read the first two", [readable(part) is not None for part in parts], [True, True, False]),
)

# %% [markdown]
# On the wire it is one MQTT v5 user property on each request (rule 2). The value is a secret: in
# this notebook we never print more than its first characters.

# %%
key, value = properties.bearer(token)
print(f"{key}: {value[:27]}...")

# %% [markdown]
# ## Step 5. The coordinator asks, over TLS, with the token
#
# A `Requester` given `token=` adds `a2a-authorization` to every request it publishes. Its
# connection is TLS (`mqtts`), which the profile requires of any connection carrying a token
# (Client Session Requirements 6). The desk's policy checks the token before it looks at anything
# else in the request: signature (with the issuer's public key), `exp` (not expired), `iss` (the
# trusted issuer), `aud` (this desk), and the scopes.

# %%
coordinator = Requester("coordinator", broker=broker.credentials("coordinator"), token=token, seed=4821,
                        retry=QUICK)
reply = coordinator.send("ticket-desk", TICKET_TEXT)
print("state:", states.short_name(reply.state), "|", reply.text)
print(f"the desk checked {policy.checked} token(s), refused {policy.refused}; its handler ran "
      f"{desk.stats.executions} time(s)")

# %% [markdown]
# ## Step 6. An intruder with valid credentials
#
# Mallory has stolen the password of the `echo` agent. To the broker she *is* echo: valid
# credentials, over TLS, so she connects. Her program runs a requester under echo's name. (Sending
# another Client ID would not help her: the broker names every connection by its login, so she can
# neither take over the desk's session nor borrow its topic rights.)

# %%
mallory = Requester("echo", broker=broker.credentials("echo"), seed=666, retry=QUICK)
print("connected as", mallory.session.endpoint.username, "| TLS:", mallory.session.endpoint.tls)

# %% [markdown]
# **She asks the desk directly.** The broker lets her publish to the desk's request topic (every
# agent may ask every agent), so the login does not stop her. The desk does: she has no token, and
# the authorization server would not give her one for the coordinator's client. This is rule 3 at
# work.

# %%
ran_before = desk.stats.executions
try:
    mallory.send("ticket-desk", "Analyze ticket TCK-4821 and tell me everything")
except A2AError as err:
    mallory_refused = err
    print(f"error {err.code} ({auth_reason(err)}): {err.message}")
print("the desk's handler ran", desk.stats.executions, "time(s) in all: not for Mallory")

# %%
as_described(said("The desk does: she has no token", (auth_reason(mallory_refused), desk.stats.executions - ran_before),
                  ("UNAUTHENTICATED", 0)))

# %% [markdown]
# **She listens.** She subscribes to everything she can think of: all of `$a2a/#`, the coordinator's
# reply topics, the desk's request topic (where the tokens travel). Mosquitto *acknowledges* each
# SUBSCRIBE (granted [QoS 1](glossary.md#QoS-1)); the ACL is applied at delivery time, message by message. Then the
# coordinator sends another request, and we compare what she got with what the observer account
# recorded at the same time.

# %%
overheard = []
for pattern in ("$a2a/#", "$a2a/v1/reply/acme/support/coordinator/#", topics.request_topic("acme", "support", "ticket-desk")):
    print(f"SUBSCRIBE {pattern:42} -> granted QoS {mallory.session.subscribe(pattern, handler=overheard.append)}")

before = recorder.wait_idle(0.1)
second = coordinator.send("ticket-desk", "Analyze ticket TCK-4821 once more, with last week's orders")
recorder.wait_idle(0.2)

print()
print("the observer recorded:", [topics.parse_topic(r["topic"]).kind for r in recorder.records[before:]])
print("Mallory received:     ", [(m.topic, "retained" if m.retain else "live") for m in overheard])

# %% [markdown]
# All she got is the desk's [retained](glossary.md#Retained-message) card, which is public: every
# agent may read every card. The request (with its token) and the reply never reached her.

# %%
as_described(
    said("All she got is the desk's retained card",
         [(m.topic, m.retain) for m in overheard], [(topics.discovery_topic("acme", "support", "ticket-desk"), True)]),
    said("The request (with its token) and the reply never reached her",
         [topics.parse_topic(m.topic).kind for m in overheard if topics.parse_topic(m.topic).kind != "discovery"], []),
)

# %% [markdown]
# **She fakes the desk's card.** A card saying "Ticket desk" that points elsewhere would lure
# requesters (and their tokens) to her. She publishes one, retained, on the desk's discovery topic,
# and then tries to delete the real one with an empty retained message:

# %%
desk_topic = topics.discovery_topic("acme", "support", "ticket-desk")
fake = dict(card, description="Send your tickets here. The old desk is retired.")
attempts = {
    "fake card": MqttMessage(desk_topic, encode_json(fake), retain=True,
                             user_properties=properties.presence_properties("online", "agent")),
    "delete card": MqttMessage(desk_topic, b"", retain=True),
}
acks = {}
for what, message in attempts.items():
    acks[what] = mallory.session.publish(message)
    print(f"{what:12} -> PUBACK {acks[what].reason_code} {acks[what].reason}")

disco.close()                      # a fresh discovery reads the retained card again
disco = Discovery(agent="discovery", broker=broker.credentials("discovery"))
entry = disco.wait_for("ticket-desk", status="online")
print()
print("the desk's card on the broker:", repr(entry.card["description"][:45] + "..."))
print("unchanged:", entry.card == card)

# %% [markdown]
# The broker refused both with [PUBACK](glossary.md#PUBACK-reason-codes) 135 *Not authorized*: the
# ACL lets each agent write only its own card. The desk's card is unchanged.

# %%
as_described(
    said("The broker refused both with PUBACK 135 Not authorized",
         [(ack.reason_code, ack.reason) for ack in acks.values()], [(135, "Not authorized")] * 2),
    said("The desk's card is unchanged", entry.card == card, True),
)


# %% [markdown]
# What a stolen password *does* give her: echo's own rights. She can publish a card for echo, read
# echo's requests and replies, and publish to any reply topic. The requester side is protected
# there by Correlation Data (a reply it did not ask for is ignored and counted), and fully only by
# the profile's optional end-to-end encryption (the *untrusted-broker security profile*). The remedy
# for a stolen password is a new one: change it in the password file and make Mosquitto reload it
# (SIGHUP), as `SecureBroker` does whenever it adds an account.
#
# ## Step 7. When the token is wrong
#
# Each row below is a coordinator holding a different token; each sends the ticket once. The desk
# answers every bad token with a JSON-RPC error, code [-32600](glossary.md#Error-codes) (*Invalid Request*: A2A v1.0 defines no
# JSON-RPC code for authentication, and the MQTT binding says to follow core JSON-RPC), whose `data`
# names the reason (`UNAUTHENTICATED`: no acceptable token; `PERMISSION_DENIED`: a good token
# without the needed scope), the HTTP status an HTTP binding would use, and the required scopes.
# The message says which check failed, and nothing more: never the token or its claims. (Creating
# a coordinator again replaces the previous client with the same Client ID.)

# %%
def tampered(good):
    # give a read-only token the missing scope by editing its claims; the signature no longer matches
    head, body, signature = good.split(".")
    edited = jwt.decode(good, options={"verify_signature": False}) | {"scope": "tickets.read tickets.analyze"}
    return ".".join([head, jwt.utils.base64url_encode(json.dumps(edited).encode()).decode(), signature])

impostor = LocalIssuer(issuer=issuer.issuer, kid=issuer.kid)   # same name and key id, another key
read_only = issuer.token(DESK, ["tickets.read"])
cases = {
    "a valid token": issuer.token(DESK, ["tickets.analyze"]),
    "no token": None,
    "expired": issuer.token(DESK, ["tickets.analyze"], lifetime_s=-60),
    "wrong issuer": issuer.token(DESK, ["tickets.analyze"], issuer="https://login.evil.example"),
    "wrong audience": issuer.token("acme/support/echo", ["tickets.analyze"]),
    "missing scope": read_only,
    "bad signature": impostor.token(DESK, ["tickets.analyze"]),
    "edited claims": tampered(read_only),
}

rows, raw_replies, errors_seen = [], [], {}
for n, (case, case_token) in enumerate(cases.items()):
    asker = Requester("coordinator", broker=broker.credentials("coordinator"), token=case_token,
                      seed=4830 + n, retry=QUICK)
    try:
        ok = asker.send("ticket-desk", TICKET_TEXT)
        raw_replies.append(ok.mqtt)
        rows.append((case, "", "", "", f"accepted: {states.short_name(ok.state)}"))
    except A2AError as err:
        raw_replies.append(err.reply.mqtt)
        errors_seen[case] = err
        info = err.data[0]
        rows.append((case, err.code, info["reason"], info["metadata"]["httpStatus"],
                     err.message.split(": ", 2)[-1]))
outcomes = pd.DataFrame(rows, columns=["token", "code", "reason", "HTTP", "why"])
outcomes

# %%
refused = outcomes[outcomes["token"] != "a valid token"]
as_described(
    said("answers every bad token with a JSON-RPC error, code -32600", set(refused["code"]), {-32600}),
    said("UNAUTHENTICATED: no acceptable token", sorted(refused.query("reason == 'UNAUTHENTICATED'")["token"]),
         sorted(set(cases) - {"a valid token", "missing scope"})),
    said("PERMISSION_DENIED: a good token without the needed scope",
         list(refused.query("reason == 'PERMISSION_DENIED'")["token"]), ["missing scope"]),
    said("never the token or its claims",
         [case for case, err in errors_seen.items() if cases[case] and cases[case] in json.dumps(err.to_dict())], []),
)

# %% [markdown]
# One of these errors as it came back, in full: `data` is a list with one `google.rpc.ErrorInfo`,
# the shape A2A v1.0 uses for error details. Auth errors are not retry-eligible: sending the same token again
# cannot help. The coordinator must get a new token first (rule 7: refresh an expired token before
# retrying).

# %%
print(json.dumps(errors_seen["missing scope"].to_dict(), indent=2))
print("retry-eligible:", errors.classify(errors_seen["expired"]).retry_eligible)

# %%
as_described(said("Auth errors are not retry-eligible",
                  {errors.classify(err).retry_eligible for err in errors_seen.values()}, {False}))

# %% [markdown]
# Every refusal happened before any processing (rule 4): the desk's handler ran only for the valid
# tokens, and no task was created for the others.

# %%
print(f"checked {policy.checked}, refused {policy.refused}, handler runs {desk.stats.executions}, "
      f"tasks in the desk's store {len(desk.runtime.store)}")

# %%
as_described(
    said("the desk's handler ran only for the valid tokens", desk.stats.executions, policy.checked - policy.refused),
    said("no task was created for the others", len(desk.runtime.store), desk.stats.executions),
)

# %% [markdown]
# ## Step 8. Never over plain MQTT
#
# A token sent over a connection without TLS can be read by anyone on the network path, and then
# replayed until it expires (rule 5). The kit's requester refuses to be created with a token on a
# plain `mqtt://` broker, such as the open broker of the other lessons:

# %%
try:
    Requester("coordinator-plain", token=token)      # the default broker: plain MQTT
except ValueError as exc:
    plain_refusal = exc
    print("refused:", exc)

# %% [markdown]
# The responder checks too: a desk whose own connection is not TLS refuses every token, valid or
# not, and tells the caller to treat it as exposed. To see that, we have to switch the requester's
# check off (`allow_token_without_tls=True` exists for this demonstration only), with a throw-away
# token for a throw-away desk.

# %%
plain_desk = Responder("ticket-desk-plain", lambda ctx: "should never run",
                       auth=issuer.policy("acme/support/ticket-desk-plain", ["tickets.analyze"]))
throwaway = issuer.token("acme/support/ticket-desk-plain", ["tickets.analyze"], lifetime_s=30)
careless = Requester("coordinator-plain", token=throwaway, allow_token_without_tls=True, seed=4840, retry=QUICK)
try:
    careless.send("ticket-desk-plain", TICKET_TEXT)
except A2AError as err:
    exposed = err
    print(f"error {err.code} ({auth_reason(err)}): {err.message}")
print("handler runs:", plain_desk.stats.executions)

# %%
as_described(
    said("a desk whose own connection is not TLS refuses every token, valid or not",
         (auth_reason(exposed), plain_desk.stats.executions), ("UNAUTHENTICATED", 0)),
    said("tells the caller to treat it as exposed", "treat a token sent here as exposed" in exposed.message, True),
)

# %% [markdown]
# ## Step 9. The token never comes back
#
# Rule 6: no reply, event or property may echo a token. First the raw MQTT replies the coordinators
# received in step 7 (payload and every property, as they crossed the broker): none of them holds a
# token, nor an `a2a-authorization` property.

# %%
all_tokens = [token, *(t for t in cases.values() if t)]

def leaks(message):
    text = message.payload.decode("utf-8", "replace") + repr(message.user_properties)
    return any(t in text for t in all_tokens)

print("raw replies checked:                ", len(raw_replies))
print("containing a token:                 ", sum(leaks(m) for m in raw_replies))
print("with an a2a-authorization property: ",
      sum(any(k.lower() == properties.AUTHORIZATION for k, _ in m.user_properties) for m in raw_replies))

# %%
as_described(
    said("the raw MQTT replies the coordinators received in step 7", len(raw_replies), len(cases)),
    said("none of them holds a token", sum(leaks(m) for m in raw_replies), 0),
    said("nor an a2a-authorization property",
         sum(any(k.lower() == properties.AUTHORIZATION for k, _ in m.user_properties) for m in raw_replies), 0),
)

# %% [markdown]
# Then what the recorder saw on the whole broker. A recording keeps every user property, but the
# value of `a2a-authorization` is replaced by `[redacted]` *before* it is stored: the key stays, so
# you can still see which requests carried a token (and spot a reply that would echo one). The first
# four requests and replies: the coordinator's in step 5, then Mallory's (`echo`, no token, refused).

# %%
recorder.wait_idle(0.2)
traffic = recorder.frame()
exchanges = traffic[traffic["kind"].isin(["request", "reply"])].reset_index(drop=True)
first_four = exchanges[["kind", "agent", "method", "error_code", "user_properties"]].head(4)
first_four

# %%
as_described(said(
    "four requests and replies: the coordinator's in step 5, then Mallory's (echo, no token, refused)",
    [(row.kind, row.agent, row.error_code, bool(row.user_properties)) for row in first_four.itertuples()],
    [("request", "ticket-desk", None, True), ("reply", "coordinator", None, False),
     ("request", "ticket-desk", None, False), ("reply", "echo", -32600, False)]))

# %%
records = json.dumps(recorder.records)
print("recorded messages:", len(recorder), "| containing a token:", sum(t in records for t in all_tokens))
print("requests with a redacted token:",
      sum(["a2a-authorization", "[redacted]"] in r["user_properties"] for r in recorder.records))
print(properties.redact([properties.bearer(token), ("a2a-task-id", "t-1")]))

# %%
as_described(said("the value of a2a-authorization is replaced by [redacted] before it is stored",
                  sum(t in records for t in all_tokens), 0))

# %% [markdown]
# ## Step 10. Your turn
#
# **1. Which lock said no?** The cell below gathers three refusals in `refusals`, labelled A, B and
# C: one you met in step 7 and two new attempts on the secured broker. For each, say who refused it:
# `"broker"`, `"desk"`, or `"kit"` (the kit's own check, before anything went on the wire). Judge by
# what came back, not by what was tried.

# %%
from a2a_nb.notebook.exercises import lesson08

refusals = {"A": errors_seen["expired"]}
refusals["B"] = mallory.session.publish(MqttMessage(topics.event_topic("acme", "support", "ticket-desk"), b"{}"))
try:
    Session("acme", "support", "ticket-desk", broker=broker.credentials("echo"))
except SessionError as exc:
    refusals["C"] = exc
lesson08.describe(refusals)

# %%
who = ...   # your answer: {"A": ..., "B": ..., "C": ...}, each "broker", "desk" or "kit"
lesson08.which_lock(who, refusals)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Reference answer (expand only after you tried)
from a2a_nb.notebook.exercises import reference
who = {"A": "desk", "B": "broker", "C": "kit"}   # a JSON-RPC error, a PUBACK reason code, no reason code at all
reference(lesson08.which_lock(who, refusals))

# %% [markdown]
# **2. Read the token, not just the error.** The coordinator got the token `weak` from somewhere,
# and the desk's policy (the check its responder runs on every request, step 7) refuses it. The
# refusal names the first check that failed, and only that one. Decode
# the token's claims as in step 4 and compare each with what the desk demands (`policy.issuer`,
# `policy.audience`, `policy.scope_sets`, and an `exp` still to come): which claims must change
# before the desk accepts a token like it? Answer with a set of claim names from `"iss"`, `"aud"`,
# `"exp"` and `"scope"`.

# %%
from a2a_nb.agents.auth import AuthError

weak = issuer.token("acme/support/echo", ["tickets.read"], subject="acme/support/coordinator")
try:
    policy.validate(weak)            # what the desk checks on each request, without sending one
except AuthError as refusal:
    print(f"the desk's policy refuses it: {refusal.reason}: {refusal.detail}")

# %%
to_fix = ...   # your answer: a set of claim names
lesson08.claims_to_fix(to_fix, weak, policy)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Reference answer (expand only after you tried)
from a2a_nb.notebook.exercises import reference
weak_claims = jwt.decode(weak, options={"verify_signature": False})
# compare weak_claims["aud"] with policy.audience, weak_claims["scope"] with policy.scope_sets,
# weak_claims["iss"] with policy.issuer and weak_claims["exp"] with time.time(): two differ
to_fix = {"aud", "scope"}
reference(lesson08.claims_to_fix(to_fix, weak, policy))


# %% [markdown]
# ## Step 11. Clean up, when you are done
#
# The exercises need the agents and the secured broker, so *Run All* leaves them running: this cell
# only defines `clean_up()`. Call it when you are done: it stops the agents, the recorder and the
# discovery, closes every MQTT session, and stops the secured broker. The broker's folder holds the
# CA's private key and every agent's password (`credentials.json`): `stop()` deletes it with the
# broker (and so does shutting the kernel down).

# %%
def clean_up():
    """Stop the agents, the recorder, the discovery and the secured broker; close every MQTT session."""
    recorder.stop()
    disco.close()
    desk.stop()
    plain_desk.stop()
    print(f"closed {a2a_nb.stop_all()} MQTT session(s)")
    broker.stop()
    print("secured broker running:", broker.running, "| its folder exists:", broker.folder.exists())


print("the agents and the secured broker keep running for the exercises: call clean_up() when you are done")

# %% [markdown]
# ## Summary
# - The **broker login** (TLS, a password per agent, `use_username_as_clientid`) proves *who is
#   connected*: a missing or wrong password is refused by the broker with CONNACK 135 *Not
#   authorized* (Mosquitto does not send 134). The kit's own check, before any packet leaves, only
#   stops an agent from using another agent's login. The **ACL** derived from that identity keeps
#   each agent to its own request and reply topics and its own card.
# - An intruder with another agent's valid password gets that agent's rights and no more: she could
#   not read the coordinator's requests or replies, and her fake and empty cards were refused with
#   PUBACK 135.
# - The login is **not** permission to be served: the desk demands a bearer token on every request,
#   as its card's `securitySchemes` and `securityRequirements` (scope `tickets.analyze`) say.
# - The token travels as `a2a-authorization: Bearer <jwt>` over TLS only; the desk checks signature,
#   `exp`, `iss`, `aud` and scopes before processing, and refuses with -32600 and a reason
#   (`UNAUTHENTICATED` 401 or `PERMISSION_DENIED` 403) that names the failed check.
# - The kit refuses a token on plain MQTT at both ends; tokens never appear in replies, and
#   recordings show `a2a-authorization` as `[redacted]`.
#
# ## What's next
# Run the whole story across shells on a secured broker. In a terminal, `python -m a2a_nb broker
# --secure` prints the commands for the other shells:
#
# ```bash
# export A2A_BROKER_URL='mqtts://127.0.0.1:PORT?ca=/tmp/a2a-nb-secure-broker-…/ca.crt&inflight=0'
# export A2A_BROKER_CREDENTIALS=/tmp/a2a-nb-secure-broker-…/credentials.json
# python -m a2a_nb serve ticket-desk                                                  # second shell
# python -m a2a_nb send ticket-desk "TCK-4821: order status not updating after checkout" --stream  # third
# ```
#
# Each process logs in as itself from `credentials.json`: the desk as `acme/support/ticket-desk`, the
# analyst it hands the ticket to as `acme/support/analyst-1`, `send` as `acme/support/cli`. Nobody
# borrows a login, so nobody is disconnected by a session takeover. With the coordinator's URL from
# the banner (its password from the file), `send` acts as the coordinator. The
# profile's optional *untrusted-broker security profile* goes one step further and encrypts payloads
# end to end, for brokers you do not trust at all. Back to [00 · Start here](00-start-here.ipynb) for
# the list of lessons, to [07 · Traffic analysis](07-traffic-analysis.ipynb) to lint a recording
# of your own, on to [09 · Two bindings, one agent](09-two-bindings.ipynb) to reach the same desk
# over HTTP, or to the appendix [11 · The conformance probe](11-conformance-probe.ipynb) to check
# whether an agent keeps the profile's rules.
