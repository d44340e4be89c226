/* PAMI_* configuration: value parsers, loading from the environment, and
 * the table pami_config_var() describes to tools. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "log.h"
#include "pami.h"

/* Every variable the core knows, from the same list as the core. */
static const char *const all_names[] = {
#define NAME_(field, name, kind, def, desc) name,
    PAMI_FOREACH_CONFIG(NAME_)
#undef NAME_
};
#define NVARS (sizeof(all_names) / sizeof(all_names[0]))

static int clear_env(void **state)
{
    (void)state;
    for (size_t i = 0; i < NVARS; i++)
        unsetenv(all_names[i]);
    return 0;
}

/* ---- pami_config_parse_size ---- */

static void test_parse_size_accepts(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        size_t      value;
    } good[] = {
        {"0", 0},
        {"64", 64},
        {"4k", 4096},
        {"4K", 4096},
        {"2M", 2u << 20},
        {"2m", 2u << 20},
        {"1G", (size_t)1 << 30},
        {"1g", (size_t)1 << 30},
        {"0k", 0},
        {"65536", 65536},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        size_t out = 12345;
        int rc = pami_config_parse_size(good[i].text, &out);
        if (rc != 0 || out != good[i].value)
            fail_msg("parse_size(\"%s\") gave rc %d, value %zu; want %zu",
                     good[i].text, rc, out, good[i].value);
    }
}

static void test_parse_size_rejects(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "", "-1", "12q", "k", "K", " 5", "5 ", "+5", "4kb", "4kk", "1.5k",
        "0x10", "abc", "G1",
        "18446744073709551616",  /* 2^64: strtoull overflow */
        "99999999999999999999999",
        "17179869184G",          /* 2^34 G = 2^64: overflow after the suffix */
        "18014398509481984k",    /* 2^54 k = 2^64 */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t out = 777;
        int rc = pami_config_parse_size(bad[i], &out);
        if (rc == 0)
            fail_msg("parse_size(\"%s\") accepted it as %zu", bad[i], out);
        /* Outputs are written only on success. */
        assert_int_equal(out, 777);
    }
    size_t out = 777;
    assert_int_not_equal(pami_config_parse_size(NULL, &out), 0);
    assert_int_equal(out, 777);
}

static void test_parse_size_largest(void **state)
{
    (void)state;
    /* The largest value that fits is accepted, one more is not. */
    char text[32];
    size_t out = 0;
    snprintf(text, sizeof(text), "%zu", SIZE_MAX);
    assert_int_equal(pami_config_parse_size(text, &out), 0);
    assert_true(out == SIZE_MAX);
    snprintf(text, sizeof(text), "%zuk", SIZE_MAX >> 10);
    assert_int_equal(pami_config_parse_size(text, &out), 0);
    assert_true(out == (SIZE_MAX >> 10) << 10);
    snprintf(text, sizeof(text), "%zuk", (SIZE_MAX >> 10) + 1);
    assert_int_not_equal(pami_config_parse_size(text, &out), 0);
}

/* ---- pami_config_parse_bool ---- */

static void test_parse_bool(void **state)
{
    (void)state;
    static const char *const yes[] = {"1", "y", "Y", "yes", "YES", "on",
                                      "On", "true", "TRUE"};
    static const char *const no[]  = {"0", "n", "N", "no", "NO", "off",
                                      "OFF", "false", "False"};
    static const char *const bad[] = {"", "2", "-1", "yess", "tru", " 1",
                                      "1 ", "enable", "10"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        int out = -5;
        if (pami_config_parse_bool(yes[i], &out) != 0 || out != 1)
            fail_msg("parse_bool(\"%s\") should give 1, gave %d", yes[i], out);
    }
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        int out = -5;
        if (pami_config_parse_bool(no[i], &out) != 0 || out != 0)
            fail_msg("parse_bool(\"%s\") should give 0, gave %d", no[i], out);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int out = -5;
        if (pami_config_parse_bool(bad[i], &out) == 0)
            fail_msg("parse_bool(\"%s\") accepted it as %d", bad[i], out);
        assert_int_equal(out, -5);
    }
    int out = -5;
    assert_int_not_equal(pami_config_parse_bool(NULL, &out), 0);
    assert_int_equal(out, -5);
}

/* ---- pami_config_load ---- */

static void test_load_defaults(void **state)
{
    (void)state;
    pami_config_t cfg;
    memset(&cfg, 0xab, sizeof(cfg));
    assert_int_equal(pami_config_load(&cfg), 0);
    assert_int_equal(cfg.log_level, PAMI_LOG_WARN);
    assert_string_equal(cfg.bootstrap, "auto");
    assert_int_equal(cfg.async_progress, 0);
    assert_int_equal(cfg.wait_spin, 200);
    assert_int_equal(cfg.immediate_max, 1024);
    assert_int_equal(cfg.rndv_threshold, 65536);
    assert_int_equal(cfg.peer_errors, 1);
    assert_int_equal(cfg.shutdown_timeout_ms, 10000);
}

static void test_load_from_env(void **state)
{
    (void)state;
    setenv("PAMI_LOG_LEVEL", "debug", 1);
    setenv("PAMI_BOOTSTRAP", "pmix", 1);
    setenv("PAMI_ASYNC_PROGRESS", "yes", 1);
    setenv("PAMI_WAIT_SPIN", "77", 1);
    setenv("PAMI_IMMEDIATE_MAX", "2k", 1);
    setenv("PAMI_RNDV_THRESHOLD", "1M", 1);
    setenv("PAMI_PEER_ERRORS", "off", 1);
    setenv("PAMI_SHUTDOWN_TIMEOUT", "250", 1);

    pami_config_t cfg;
    assert_int_equal(pami_config_load(&cfg), 0);
    assert_int_equal(cfg.log_level, PAMI_LOG_DEBUG);
    assert_string_equal(cfg.bootstrap, "pmix");
    assert_int_equal(cfg.async_progress, 1);
    assert_int_equal(cfg.wait_spin, 77);
    assert_int_equal(cfg.immediate_max, 2048);
    assert_int_equal(cfg.rndv_threshold, 1u << 20);
    assert_int_equal(cfg.peer_errors, 0);
    assert_int_equal(cfg.shutdown_timeout_ms, 250);
    clear_env(NULL);
}

/* A malformed value keeps the default, the others still apply, and the
 * load reports -1. */
static void test_load_malformed_keeps_default(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        const char *value;
    } bad[] = {
        {"PAMI_LOG_LEVEL", "loud"},
        {"PAMI_BOOTSTRAP", ""},
        {"PAMI_BOOTSTRAP", "a-bootstrap-name-far-too-long-to-fit"},
        {"PAMI_ASYNC_PROGRESS", "maybe"},
        {"PAMI_WAIT_SPIN", "abc"},
        {"PAMI_IMMEDIATE_MAX", "-1"},
        {"PAMI_RNDV_THRESHOLD", "12q"},
        {"PAMI_PEER_ERRORS", "2"},
        {"PAMI_SHUTDOWN_TIMEOUT", "99999999999999999999999"},
    };
    pami_config_t def;
    assert_int_equal(pami_config_load(&def), 0);

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        clear_env(NULL);
        setenv(bad[i].name, bad[i].value, 1);
        /* A well-formed neighbour must still be applied. */
        const char *other = strcmp(bad[i].name, "PAMI_WAIT_SPIN") == 0
                                ? "PAMI_IMMEDIATE_MAX" : "PAMI_WAIT_SPIN";
        setenv(other, "3", 1);

        pami_config_t cfg;
        if (pami_config_load(&cfg) != -1)
            fail_msg("%s='%s' was accepted", bad[i].name, bad[i].value);
        assert_int_equal(cfg.log_level, def.log_level);
        assert_string_equal(cfg.bootstrap, def.bootstrap);
        assert_int_equal(cfg.async_progress, def.async_progress);
        assert_int_equal(cfg.rndv_threshold, def.rndv_threshold);
        assert_int_equal(cfg.peer_errors, def.peer_errors);
        assert_int_equal(cfg.shutdown_timeout_ms, def.shutdown_timeout_ms);
        if (strcmp(other, "PAMI_WAIT_SPIN") == 0) {
            assert_int_equal(cfg.wait_spin, 3);
            assert_int_equal(cfg.immediate_max, def.immediate_max);
        } else {
            assert_int_equal(cfg.wait_spin, def.wait_spin);
            assert_int_equal(cfg.immediate_max, 3);
        }
    }
    clear_env(NULL);
}

/* ---- pami_config_var ---- */

static void test_var_table(void **state)
{
    (void)state;
    unsigned n = 0;
    pami_config_var_t vars[64];
    for (;;) {
        assert_true(n < 64);
        pami_config_var_t v = {0};
        pami_result_t rc = pami_config_var(n, &v);
        if (rc == PAMI_NOT_FOUND)
            break;
        assert_int_equal(rc, PAMI_SUCCESS);
        assert_non_null(v.name);
        assert_non_null(v.default_value);
        assert_non_null(v.description);
        assert_true(strlen(v.name) > strlen("PAMI_"));
        /* Only a list may be empty by default (no plug-ins). */
        if (strcmp(v.name, "PAMI_PROTOCOLS") != 0)
            assert_true(strlen(v.default_value) > 0);
        assert_true(strlen(v.description) > 0);
        if (strncmp(v.name, "PAMI_", 5) != 0)
            fail_msg("variable %u is named '%s'", n, v.name);
        vars[n++] = v;
    }
    /* The core's variables first, in their order; built-in protocols'
     * after them. */
    assert_true(n >= NVARS);
    for (unsigned i = 0; i < n; i++) {
        if (i < NVARS)
            assert_string_equal(vars[i].name, all_names[i]);
        for (unsigned j = i + 1; j < n; j++)
            assert_string_not_equal(vars[i].name, vars[j].name);
    }
    pami_config_var_t v;
    assert_int_equal(pami_config_var(n + 1, &v), PAMI_NOT_FOUND);
    assert_int_equal(pami_config_var(~0u, &v), PAMI_NOT_FOUND);
    assert_int_equal(pami_config_var(0, NULL), PAMI_INVAL);
}

/* Every documented default is itself a valid value of its variable. */
static void test_var_defaults_parse(void **state)
{
    (void)state;
    pami_config_var_t v;
    for (unsigned i = 0; pami_config_var(i, &v) == PAMI_SUCCESS; i++) {
        clear_env(NULL);
        setenv(v.name, v.default_value, 1);
        pami_config_t cfg;
        if (pami_config_load(&cfg) != 0)
            fail_msg("%s: the default '%s' does not parse", v.name,
                     v.default_value);
    }
    clear_env(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_size_accepts),
        cmocka_unit_test(test_parse_size_rejects),
        cmocka_unit_test(test_parse_size_largest),
        cmocka_unit_test(test_parse_bool),
        cmocka_unit_test_setup(test_load_defaults, clear_env),
        cmocka_unit_test_setup(test_load_from_env, clear_env),
        cmocka_unit_test_setup(test_load_malformed_keeps_default, clear_env),
        cmocka_unit_test(test_var_table),
        cmocka_unit_test(test_var_defaults_parse),
    };
    /* Malformed values are logged; keep the test output for real failures. */
    pami_log_level_current = PAMI_LOG_ERROR;
    return cmocka_run_group_tests_name("config", tests, clear_env, NULL);
}
