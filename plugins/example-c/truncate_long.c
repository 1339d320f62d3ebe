/*
 * A ctxlab strategy plugin in plain C: "truncate long messages".
 *
 * Every message that reaches an agent's context with more than `max_chars` characters is cut to
 * its first and last max_chars/2 characters, persistently. Only the new messages of each call are
 * looked at, so a call costs O(new messages) whatever the history length.
 *
 * Build:  cc -shared -fPIC -I plugins/api/include -o libctxlab_plugin_c_example.so truncate_long.c
 *
 * It uses nothing but the header and the C standard library: the ABI is language-neutral.
 */
#include "ctxlab_plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_MAX_CHARS 100
#define DEFAULT_MAX_CHARS 2000

typedef struct instance {
    unsigned long long max_chars;
} instance;

static void write_str(const ctxlab_writer *w, const char *s) {
    if (w && w->write) w->write(w->ctx, (const uint8_t *)s, strlen(s));
}

/* 120431 -> "120,431": numbers shown to users have thousands separators. */
static void fmt_thousands(unsigned long long n, char *out, size_t cap) {
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%llu", n);
    size_t o = 0;
    for (int i = 0; i < len && o + 1 < cap; i++) {
        if (i > 0 && (len - i) % 3 == 0 && o + 2 < cap) out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
}

/* Parses the flat JSON object the host sends ({"max_chars": 3000} or empty). Returns 0 and
 * writes to `err` on anything else. */
static int parse_params(ctxlab_str json, unsigned long long *max_chars, const ctxlab_writer *err) {
    const char *p = (const char *)json.ptr, *end = p + json.len;
    char msg[256];
    *max_chars = DEFAULT_MAX_CHARS;
#define SKIP_WS while (p < end && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) p++
    SKIP_WS;
    if (p == end) return 1;
    if (*p != '{') { write_str(err, "parameters must be a JSON object"); return 0; }
    p++;
    for (;;) {
        SKIP_WS;
        if (p < end && *p == '}') return 1;
        if (p >= end || *p != '"') { write_str(err, "parameters: expected a quoted name"); return 0; }
        const char *key = ++p;
        while (p < end && *p != '"') p++;
        size_t key_len = (size_t)(p - key);
        if (p >= end) { write_str(err, "parameters: unterminated name"); return 0; }
        p++;
        SKIP_WS;
        if (p >= end || *p != ':') { write_str(err, "parameters: expected ':'"); return 0; }
        p++;
        SKIP_WS;
        if (key_len != 9 || memcmp(key, "max_chars", 9) != 0) {
            snprintf(msg, sizeof msg, "unknown parameter %.*s; known parameters: max_chars",
                     (int)key_len, key);
            write_str(err, msg);
            return 0;
        }
        char num[32];
        size_t n = 0;
        while (p < end && n + 1 < sizeof num && strchr("0123456789.-+eE", *p)) num[n++] = *p++;
        num[n] = '\0';
        char *stop = NULL;
        double v = strtod(num, &stop);
        if (n == 0 || *stop != '\0' || v != (double)(long long)v) {
            snprintf(msg, sizeof msg, "parameter max_chars: expected an integer, got %s",
                     n ? num : "something else");
            write_str(err, msg);
            return 0;
        }
        if (v < MIN_MAX_CHARS) {
            snprintf(msg, sizeof msg, "parameter max_chars: %lld is below the minimum %d",
                     (long long)v, MIN_MAX_CHARS);
            write_str(err, msg);
            return 0;
        }
        *max_chars = (unsigned long long)v;
        SKIP_WS;
        if (p < end && *p == ',') { p++; continue; }
        if (p < end && *p == '}') return 1;
        write_str(err, "parameters: expected ',' or '}'");
        return 0;
    }
#undef SKIP_WS
}

static void *create(size_t strategy, ctxlab_str params_json, const ctxlab_writer *err) {
    unsigned long long max_chars;
    if (strategy != 0) { write_str(err, "no such strategy"); return NULL; }
    if (!parse_params(params_json, &max_chars, err)) return NULL;
    instance *inst = malloc(sizeof *inst);
    if (!inst) { write_str(err, "out of memory"); return NULL; }
    inst->max_chars = max_chars;
    return inst;
}

static int32_t decide(void *self, const ctxlab_call *call, const ctxlab_sink *sink,
                      const ctxlab_writer *err) {
    const instance *inst = self;
    if (!inst || !call || !sink) { write_str(err, "null argument"); return CTXLAB_STATUS_ERROR; }
    size_t first_new = call->messages_len > call->new_messages
                           ? call->messages_len - (size_t)call->new_messages : 0;
    unsigned long long cut = 0, before = 0;
    /* Adjacent long messages share one op: [run_start, i). */
    size_t run_start = (size_t)-1;
    for (size_t i = first_new; i <= call->messages_len; i++) {
        int long_msg = i < call->messages_len
                       && call->messages[i].chars > inst->max_chars
                       && !(call->messages[i].flags & CTXLAB_FLAG_PINNED);
        if (long_msg) {
            if (run_start == (size_t)-1) run_start = i;
            cut++;
            before += call->messages[i].tokens;
        } else if (run_start != (size_t)-1) {
            ctxlab_op op = {0};
            op.kind = CTXLAB_OP_TRUNCATE;
            op.scope = CTXLAB_SCOPE_PERSISTENT;
            op.start = run_start;
            op.end = i;
            op.head_chars = inst->max_chars / 2;
            op.tail_chars = inst->max_chars / 2;
            op.role = CTXLAB_ROLE_ASSISTANT;
            ctxlab_str marker = CTXLAB_STR("\n[... truncated ...]\n");
            op.text = marker;
            sink->push_op(sink->ctx, &op); /* the host copies it: a stack value is fine */
            run_start = (size_t)-1;
        }
    }
    if (cut > 0) {
        char n[32], limit[32], message[160];
        fmt_thousands(cut, n, sizeof n);
        fmt_thousands(inst->max_chars, limit, sizeof limit);
        snprintf(message, sizeof message, "truncated %s message%s longer than %s characters", n,
                 cut == 1 ? "" : "s", limit);
        ctxlab_event ev = {0};
        ev.kind = CTXLAB_EVENT_TRUNCATION;
        ctxlab_str code = CTXLAB_STR("truncate_long");
        ev.code = code;
        ev.message.ptr = (const uint8_t *)message;
        ev.message.len = strlen(message);
        ev.tokens_before = before;
        sink->push_event(sink->ctx, &ev);
    }
    return CTXLAB_STATUS_OK;
}

static int32_t thresholds(void *self, const ctxlab_sink *sink) {
    (void)self;
    (void)sink; /* not a token-threshold strategy: no lines to draw */
    return CTXLAB_STATUS_OK;
}

static int is_format(ctxlab_str format) {
    return format.len == 13 && memcmp(format.ptr, "c-example-ini", 13) == 0;
}

static int32_t export_params(void *self, ctxlab_str format, const ctxlab_writer *out,
                             const ctxlab_writer *err) {
    const instance *inst = self;
    char text[96];
    if (!is_format(format)) {
        write_str(err, "unknown export format; this strategy exports c-example-ini");
        return CTXLAB_STATUS_ERROR;
    }
    snprintf(text, sizeof text, "[truncate_long]\nmax_chars = %llu\n", inst->max_chars);
    write_str(out, text);
    return CTXLAB_STATUS_OK;
}

static int32_t import_params(size_t strategy, ctxlab_str format, ctxlab_str text,
                             const ctxlab_writer *out, const ctxlab_writer *err) {
    char buf[512], json[64];
    unsigned long long v;
    (void)strategy;
    if (!is_format(format)) {
        write_str(err, "unknown import format; this strategy reads c-example-ini");
        return CTXLAB_STATUS_ERROR;
    }
    size_t n = text.len < sizeof buf - 1 ? text.len : sizeof buf - 1;
    memcpy(buf, text.ptr, n); /* host strings are not NUL-terminated: copy before using libc */
    buf[n] = '\0';
    const char *line = strstr(buf, "max_chars");
    if (!line || sscanf(line, "max_chars = %llu", &v) != 1) {
        write_str(err, "expected a line `max_chars = <number>`");
        return CTXLAB_STATUS_ERROR;
    }
    snprintf(json, sizeof json, "{\"max_chars\":%llu}", v);
    write_str(out, json);
    return CTXLAB_STATUS_OK;
}

static void destroy(void *self) { free(self); }

static const ctxlab_strategy_desc STRATEGIES[] = {{
    CTXLAB_STR("c-example.truncate-long"),
    CTXLAB_STR("Truncate long messages (C)"),
    CTXLAB_STR("example"),
    CTXLAB_STR("Cuts every new message longer than max_chars to its head and tail."),
    CTXLAB_STR("[{\"name\":\"max_chars\",\"type\":\"int\",\"default\":2000,\"min\":100,"
               "\"description\":\"Messages longer than this many characters are cut to their "
               "first and last max_chars/2.\",\"key\":\"truncate_long.max_chars\"}]"),
    CTXLAB_STR("c-example-ini"),
}};

static const ctxlab_plugin_table TABLE = {
    CTXLAB_ABI_MAJOR,
    CTXLAB_ABI_MINOR,
    sizeof(ctxlab_plugin_table),
    CTXLAB_STR("c-example"),
    CTXLAB_STR("0.1.0"),
    STRATEGIES,
    sizeof STRATEGIES / sizeof STRATEGIES[0],
    create,
    decide,
    thresholds,
    export_params,
    import_params,
    destroy,
};

CTXLAB_EXPORT const ctxlab_plugin_table *ctxlab_plugin_entry_v1(void) { return &TABLE; }
