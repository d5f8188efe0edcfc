/*
 * a2a_status: broker-managed status for the A2A over MQTT profile, as a Mosquitto 2.0 plugin.
 *
 * Profile: "Optional Broker-Managed Status via MQTT User Properties" (and Extended conformance 2).
 * The broker knows whether an agent's connection is alive; agents can only say so themselves (and
 * their Last Will says it late, after the keep-alive runs out). This plugin lets the broker say it:
 *
 *   1. A PUBLISH to $a2a/v1/discovery/{org}/{unit}/{agent} from the client whose Client ID is
 *      {org}/{unit}/{agent} (the card's own agent) has its a2a-status and a2a-status-source user
 *      properties replaced by a2a-status=online, a2a-status-source=broker before the broker stores
 *      (retained) and forwards it: the client is connected, it is publishing. The plugin keeps a copy
 *      of that card: at most MAX_CARD bytes of payload (the kit's own card limit, 64 KiB) and
 *      MAX_CARD_PROPERTIES bytes of property strings (4 KiB), for at most `max_agents` agents
 *      (plugin_opt_max_agents, 1 to 1024, default 1024): at most 68 KiB a card, 68 MiB in all.
 *      A card it cannot keep (larger, or every slot taken) is forwarded exactly as the agent sent
 *      it: the broker does not say "online" for an agent it could not later say "offline" for.
 *      A full table is logged (a notice, at most once a minute); it frees as agents disconnect.
 *   2. An empty retained publish there (the agent unregisters) is left alone and the copy forgotten.
 *      A card the agent itself marks a2a-status=offline (its goodbye before a clean disconnect) is
 *      forwarded as it is: the broker does not turn a goodbye into "online" for the moment it takes.
 *   3. When that client's connection ends, cleanly or not, the broker publishes the kept card again,
 *      retained, with a2a-status=offline, a2a-status-source=broker.
 *
 * Anything else is left as it came: other topics, a card published by another client (a bridge, a
 * tool), cards it cannot keep. The agent's own Last Will (offline, source lwt) is sent by Mosquitto
 * without passing this plugin; this plugin's offline card follows it, so the retained card a
 * subscriber reads last says offline/broker (tests/integration/test_broker_status.py).
 *
 * And on every topic: a PUBLISH with U+FEFF in a property string (a User Property's name or value,
 * the Content Type, the Response Topic) is refused (PUBACK 135 Not authorized; a QoS 0 one is
 * dropped). MQTT v5 allows U+FEFF there (spec 1.5.4), but paho-mqtt 2.2 drops the connection of
 * the client that *receives* it as a malformed packet: one such retained card would take every
 * kit client that reads it off the broker (docs/paho-feff-bug.md). Mosquitto 2.0 gives plugins no
 * hook on a client's Will, so a Will carrying U+FEFF still passes: the kit's session survives it
 * (a2a_nb/mqtt/session.py: it stops asking for retained messages after such a drop). Bounds and
 * tests: docs/surfaces-retained.md, tests/integration/test_broker_status_bounds.py.
 *
 * Built by a2a_nb/mqtt/status_plugin.py with the system C compiler and Debian's mosquitto-dev and
 * libmosquitto-dev headers; the mosquitto_* functions come from the broker itself when it loads it.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mosquitto.h>
#include <mosquitto_broker.h>
#include <mosquitto_plugin.h>
#include <mqtt_protocol.h>

#define DISCOVERY_PREFIX "$a2a/v1/discovery/"
#define STATUS "a2a-status"
#define STATUS_SOURCE "a2a-status-source"
#define MAX_AGENTS 1024
#define MAX_CARD (64 * 1024)
#define MAX_CARD_PROPERTIES (4 * 1024)
#define BOM "\xEF\xBB\xBF" /* U+FEFF in UTF-8 */
#define NOTICE_EVERY_S 60

struct card {
	char *client_id; /* NULL: a free slot */
	char *topic;
	void *payload;
	uint32_t payloadlen;
	uint8_t qos;
	mosquitto_property *properties; /* the agent's own, without a2a-status(-source) */
};

static mosquitto_plugin_id_t *plugin_id = NULL;
static struct card cards[MAX_AGENTS];
static int max_agents = MAX_AGENTS;
static time_t full_said = 0; /* when the last "table full" notice was logged */
static time_t refused_said = 0; /* when the last U+FEFF refusal was logged */

static void forget(struct card *c)
{
	mosquitto_free(c->client_id);
	mosquitto_free(c->topic);
	mosquitto_free(c->payload);
	mosquitto_property_free_all(&c->properties);
	memset(c, 0, sizeof(*c));
}

static struct card *find(const char *client_id)
{
	for (int i = 0; i < max_agents; i++) {
		if (cards[i].client_id && strcmp(cards[i].client_id, client_id) == 0) return &cards[i];
	}
	return NULL;
}

static struct card *free_slot(void)
{
	for (int i = 0; i < max_agents; i++) {
		if (cards[i].client_id == NULL) return &cards[i];
	}
	return NULL;
}

/* A copy of `props` without the status user properties, or NULL (an empty list is NULL too).
 * `*failed` is set when memory ran out. */
static mosquitto_property *without_status(const mosquitto_property *props, bool *failed)
{
	mosquitto_property *out = NULL;
	int rc = MOSQ_ERR_SUCCESS;
	for (const mosquitto_property *p = props; p != NULL && rc == MOSQ_ERR_SUCCESS; p = mosquitto_property_next(p)) {
		int id = mosquitto_property_identifier(p);
		char *name = NULL, *value = NULL;
		uint8_t byte;
		uint32_t int32;
		void *data = NULL;
		uint16_t len;
		switch (id) {
		case MQTT_PROP_USER_PROPERTY:
			if (mosquitto_property_read_string_pair(p, id, &name, &value, false) == NULL) break;
			if (strcmp(name, STATUS) != 0 && strcmp(name, STATUS_SOURCE) != 0) {
				rc = mosquitto_property_add_string_pair(&out, id, name, value);
			}
			break;
		case MQTT_PROP_PAYLOAD_FORMAT_INDICATOR:
			if (mosquitto_property_read_byte(p, id, &byte, false)) rc = mosquitto_property_add_byte(&out, id, byte);
			break;
		case MQTT_PROP_MESSAGE_EXPIRY_INTERVAL:
			if (mosquitto_property_read_int32(p, id, &int32, false)) rc = mosquitto_property_add_int32(&out, id, int32);
			break;
		case MQTT_PROP_CONTENT_TYPE:
		case MQTT_PROP_RESPONSE_TOPIC:
			if (mosquitto_property_read_string(p, id, &value, false)) rc = mosquitto_property_add_string(&out, id, value);
			break;
		case MQTT_PROP_CORRELATION_DATA:
			if (mosquitto_property_read_binary(p, id, &data, &len, false)) rc = mosquitto_property_add_binary(&out, id, data, len);
			break;
		default: /* topic alias, subscription identifier: per connection, not part of a stored card */
			break;
		}
		mosquitto_free(name); /* the read functions allocate with the broker's allocator */
		mosquitto_free(value);
		mosquitto_free(data);
	}
	if (rc != MOSQ_ERR_SUCCESS) {
		mosquitto_property_free_all(&out);
		*failed = true;
	}
	return out;
}

/* A copy of `props` with the broker's word: a2a-status=`status`, a2a-status-source=broker (any status
 * the agent set removed). NULL when memory ran out. */
static mosquitto_property *with_status(const mosquitto_property *props, const char *status)
{
	bool failed = false;
	mosquitto_property *out = without_status(props, &failed);
	int rc = failed ? MOSQ_ERR_NOMEM : mosquitto_property_add_string_pair(&out, MQTT_PROP_USER_PROPERTY, STATUS, status);
	if (rc == MOSQ_ERR_SUCCESS) rc = mosquitto_property_add_string_pair(&out, MQTT_PROP_USER_PROPERTY, STATUS_SOURCE, "broker");
	if (rc != MOSQ_ERR_SUCCESS) mosquitto_property_free_all(&out);
	return out;
}

/* The card topic of this client, or false. */
static bool own_card(const char *topic, const char *client_id)
{
	size_t n = strlen(DISCOVERY_PREFIX);
	return topic && client_id && strncmp(topic, DISCOVERY_PREFIX, n) == 0 && strcmp(topic + n, client_id) == 0;
}

/* The bytes of the strings and binary data in `props` (what a kept copy of them costs, about). */
static size_t properties_size(const mosquitto_property *props)
{
	size_t size = 0;
	for (const mosquitto_property *p = props; p != NULL; p = mosquitto_property_next(p)) {
		int id = mosquitto_property_identifier(p);
		char *name = NULL, *value = NULL;
		void *data = NULL;
		uint16_t len = 0;
		if (id == MQTT_PROP_USER_PROPERTY) {
			if (mosquitto_property_read_string_pair(p, id, &name, &value, false)) size += strlen(name) + strlen(value);
		} else if (id == MQTT_PROP_CONTENT_TYPE || id == MQTT_PROP_RESPONSE_TOPIC) {
			if (mosquitto_property_read_string(p, id, &value, false)) size += strlen(value);
		} else if (id == MQTT_PROP_CORRELATION_DATA) {
			if (mosquitto_property_read_binary(p, id, &data, &len, false)) size += len;
		}
		size += 8; /* the property's own bookkeeping */
		mosquitto_free(name);
		mosquitto_free(value);
		mosquitto_free(data);
	}
	return size;
}

/* Can this card be kept (a slot of its own agent or a free one, within the size bounds)? */
static bool can_keep(const char *client_id, const struct mosquitto_evt_message *ed)
{
	if (ed->payloadlen > MAX_CARD || properties_size(ed->properties) > MAX_CARD_PROPERTIES) return false;
	if (find(client_id) != NULL || free_slot() != NULL) return true;
	time_t now = time(NULL);
	if (now - full_said >= NOTICE_EVERY_S) {
		full_said = now;
		mosquitto_log_printf(MOSQ_LOG_NOTICE, "a2a_status: %d agents watched (the most it keeps): the card of %s "
				"is forwarded as its agent sent it, not marked by the broker", max_agents, client_id);
	}
	return false;
}

static void remember(const char *client_id, const struct mosquitto_evt_message *ed, const mosquitto_property *plain)
{
	struct card *c = find(client_id);
	if (c != NULL) forget(c);
	c = free_slot();
	if (c == NULL) return; /* can_keep said yes: only a failed allocation gets here */
	bool failed = false;
	c->client_id = mosquitto_strdup(client_id);
	c->topic = mosquitto_strdup(ed->topic);
	c->payload = mosquitto_malloc(ed->payloadlen ? ed->payloadlen : 1);
	c->properties = without_status(plain, &failed);
	if (!c->client_id || !c->topic || !c->payload || failed) {
		forget(c);
		return;
	}
	memcpy(c->payload, ed->payload, ed->payloadlen);
	c->payloadlen = ed->payloadlen;
	c->qos = ed->qos;
}

/* Does `props` say a2a-status=offline? */
static bool says_offline(const mosquitto_property *props)
{
	bool offline = false;
	for (const mosquitto_property *p = props; p != NULL; p = mosquitto_property_next(p)) {
		char *name = NULL, *value = NULL;
		if (mosquitto_property_identifier(p) == MQTT_PROP_USER_PROPERTY
				&& mosquitto_property_read_string_pair(p, MQTT_PROP_USER_PROPERTY, &name, &value, false) != NULL) {
			if (strcmp(name, STATUS) == 0) offline = strcmp(value, "offline") == 0;
		}
		mosquitto_free(name);
		mosquitto_free(value);
	}
	return offline;
}

/* Does a property string of `props` hold U+FEFF (which paho-mqtt 2.2 cannot receive)? */
static bool holds_bom(const mosquitto_property *props)
{
	bool found = false;
	for (const mosquitto_property *p = props; p != NULL && !found; p = mosquitto_property_next(p)) {
		int id = mosquitto_property_identifier(p);
		char *name = NULL, *value = NULL;
		if (id == MQTT_PROP_USER_PROPERTY) {
			if (mosquitto_property_read_string_pair(p, id, &name, &value, false)) {
				found = strstr(name, BOM) != NULL || strstr(value, BOM) != NULL;
			}
		} else if (id == MQTT_PROP_CONTENT_TYPE || id == MQTT_PROP_RESPONSE_TOPIC) {
			if (mosquitto_property_read_string(p, id, &value, false)) found = strstr(value, BOM) != NULL;
		}
		mosquitto_free(name);
		mosquitto_free(value);
	}
	return found;
}

static int on_message(int event, void *event_data, void *userdata)
{
	(void)event;
	(void)userdata;
	struct mosquitto_evt_message *ed = event_data;
	const char *client_id = mosquitto_client_id(ed->client);
	if (holds_bom(ed->properties)) {
		time_t now = time(NULL);
		if (now - refused_said >= NOTICE_EVERY_S) {
			refused_said = now;
			mosquitto_log_printf(MOSQ_LOG_NOTICE, "a2a_status: refused a PUBLISH from %s to %s: U+FEFF in a property "
					"(paho-mqtt 2.2 subscribers would drop their connection on it); more such refusals are not logged "
					"for %d s", client_id ? client_id : "?", ed->topic ? ed->topic : "?", NOTICE_EVERY_S);
		}
		return MOSQ_ERR_ACL_DENIED;
	}
	if (!own_card(ed->topic, client_id)) return MOSQ_ERR_SUCCESS;
	if (ed->payloadlen == 0) { /* unregistered: nothing to speak for any more */
		struct card *c = find(client_id);
		if (c != NULL) forget(c);
		return MOSQ_ERR_SUCCESS;
	}
	if (!can_keep(client_id, ed)) { /* forwarded as it came; an older copy would be stale: dropped */
		struct card *c = find(client_id);
		if (c != NULL) forget(c);
		return MOSQ_ERR_SUCCESS;
	}
	if (says_offline(ed->properties)) { /* the agent's goodbye: forwarded as it is */
		remember(client_id, ed, ed->properties);
		return MOSQ_ERR_SUCCESS;
	}
	mosquitto_property *online = with_status(ed->properties, "online");
	if (online == NULL) return MOSQ_ERR_SUCCESS; /* out of memory: forwarded as it came */
	remember(client_id, ed, online);
	mosquitto_property_free_all(&ed->properties);
	ed->properties = online;
	return MOSQ_ERR_SUCCESS;
}

static int on_disconnect(int event, void *event_data, void *userdata)
{
	(void)event;
	(void)userdata;
	struct mosquitto_evt_disconnect *ed = event_data;
	const char *client_id = mosquitto_client_id(ed->client);
	struct card *c = client_id ? find(client_id) : NULL;
	if (c == NULL) return MOSQ_ERR_SUCCESS;
	mosquitto_property *offline = with_status(c->properties, "offline");
	if (offline != NULL && mosquitto_broker_publish_copy(NULL, c->topic, (int)c->payloadlen, c->payload, c->qos,
				true, offline) != MOSQ_ERR_SUCCESS) {
		mosquitto_property_free_all(&offline); /* owned by the broker only on success */
	}
	forget(c);
	return MOSQ_ERR_SUCCESS;
}

int mosquitto_plugin_version(int supported_version_count, const int *supported_versions)
{
	for (int i = 0; i < supported_version_count; i++) {
		if (supported_versions[i] == 5) return 5;
	}
	return -1;
}

int mosquitto_plugin_init(mosquitto_plugin_id_t *identifier, void **userdata, struct mosquitto_opt *opts, int opt_count)
{
	(void)userdata;
	plugin_id = identifier;
	memset(cards, 0, sizeof(cards));
	max_agents = MAX_AGENTS;
	for (int i = 0; i < opt_count; i++) { /* plugin_opt_max_agents N: fewer slots (a test fills them) */
		if (opts[i].key && opts[i].value && strcmp(opts[i].key, "max_agents") == 0) {
			long n = strtol(opts[i].value, NULL, 10);
			max_agents = n >= 1 && n <= MAX_AGENTS ? (int)n : MAX_AGENTS;
		}
	}
	int rc = mosquitto_callback_register(plugin_id, MOSQ_EVT_MESSAGE, on_message, NULL, NULL);
	if (rc == MOSQ_ERR_SUCCESS) rc = mosquitto_callback_register(plugin_id, MOSQ_EVT_DISCONNECT, on_disconnect, NULL, NULL);
	if (rc == MOSQ_ERR_SUCCESS) mosquitto_log_printf(MOSQ_LOG_INFO, "a2a_status: broker-managed status on $a2a/v1/discovery/");
	return rc;
}

int mosquitto_plugin_cleanup(void *userdata, struct mosquitto_opt *opts, int opt_count)
{
	(void)userdata;
	(void)opts;
	(void)opt_count;
	mosquitto_callback_unregister(plugin_id, MOSQ_EVT_MESSAGE, on_message, NULL);
	mosquitto_callback_unregister(plugin_id, MOSQ_EVT_DISCONNECT, on_disconnect, NULL);
	for (int i = 0; i < MAX_AGENTS; i++) {
		if (cards[i].client_id) forget(&cards[i]);
	}
	return MOSQ_ERR_SUCCESS;
}
