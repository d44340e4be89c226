/* The runner's outputs (see cf_report.h). */
#include "cf_report.h"
#include "cf_child.h"

#include <string.h>

const char *cf_status_word(int status)
{
    switch (status) {
    case CF_PASSED:  return "PASS";
    case CF_FAILED:  return "FAIL";
    case CF_TIMEOUT: return "TIMEOUT";
    case CF_CRASHED: return "CRASH";
    case CF_SKIPPED: return "SKIP";
    default:         return "?";
    }
}

void cf_report_line(FILE *f, const cf_outcome_t *o)
{
    fprintf(f, "%-7s %s (%.2f s)\n", cf_status_word(o->status), o->id,
            o->seconds);
    if (o->status != CF_PASSED && o->detail != NULL) {
        /* Indented, so the line after "FAIL name" is expected vs seen. */
        const char *p = o->detail;
        while (*p) {
            const char *nl = strchr(p, '\n');
            size_t len = nl ? (size_t)(nl - p) : strlen(p);
            fprintf(f, "        %.*s\n", (int)len, p);
            p += len + (nl != NULL);
        }
    }
    fflush(f);
}

void cf_report_summary(FILE *f, const cf_outcome_t *o, size_t n)
{
    size_t count[5] = {0};
    for (size_t i = 0; i < n; i++)
        if (o[i].status >= 0 && o[i].status < 5)
            count[o[i].status]++;
    fprintf(f, "\n%zu cases: %zu passed, %zu failed, %zu timed out, "
               "%zu crashed, %zu skipped\n", n, count[CF_PASSED],
            count[CF_FAILED], count[CF_TIMEOUT], count[CF_CRASHED],
            count[CF_SKIPPED]);
    for (size_t i = 0; i < n; i++)
        if (o[i].status != CF_PASSED && o[i].status != CF_SKIPPED)
            fprintf(f, "  %s %s (ranks %s)\n", cf_status_word(o[i].status),
                    o[i].id, o[i].ranks);
    fflush(f);
}

void cf_report_tap_plan(FILE *f, size_t n)
{
    fprintf(f, "TAP version 13\n1..%zu\n", n);
    fflush(f);
}

/* A YAML double-quoted scalar. */
static void yaml_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c < 0x20)
            fprintf(f, "\\x%02x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

void cf_report_tap(FILE *f, size_t index, const cf_outcome_t *o)
{
    if (o->status == CF_SKIPPED) {
        fprintf(f, "ok %zu - %s # SKIP %s\n", index, o->id,
                o->detail ? o->detail : "");
    } else if (o->status == CF_PASSED) {
        fprintf(f, "ok %zu - %s\n", index, o->id);
    } else {
        fprintf(f, "not ok %zu - %s\n  ---\n  status: %s\n  ranks: ",
                index, o->id, cf_status_word(o->status));
        yaml_str(f, o->ranks);
        fputs("\n  message: ", f);
        yaml_str(f, o->detail ? o->detail : "");
        fprintf(f, "\n  duration_s: %.3f\n  ...\n", o->seconds);
    }
    fflush(f);
}

static void xml_str(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\n': fputs("&#10;", f); break;
        default:
            /* XML 1.0 has no other control characters. */
            fputc(c < 0x20 && c != '\t' ? '?' : c, f);
        }
    }
}

int cf_report_junit(const char *path, const cf_outcome_t *o, size_t n)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    size_t fails = 0, errors = 0, skips = 0;
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        fails += o[i].status == CF_FAILED;
        errors += o[i].status == CF_TIMEOUT || o[i].status == CF_CRASHED;
        skips += o[i].status == CF_SKIPPED;
        total += o[i].seconds;
    }
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<testsuites name=\"pami-conformance\" tests=\"%zu\" "
               "failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" "
               "time=\"%.3f\">\n", n, fails, errors, skips, total);
    /* One <testsuite> per suite, in the order they first appear. */
    for (size_t i = 0; i < n; i++) {
        int first = 1;
        for (size_t j = 0; j < i; j++)
            if (strcmp(o[j].suite, o[i].suite) == 0)
                first = 0;
        if (!first)
            continue;
        size_t t = 0, fl = 0, er = 0, sk = 0;
        double secs = 0;
        for (size_t j = i; j < n; j++)
            if (strcmp(o[j].suite, o[i].suite) == 0) {
                t++;
                fl += o[j].status == CF_FAILED;
                er += o[j].status == CF_TIMEOUT || o[j].status == CF_CRASHED;
                sk += o[j].status == CF_SKIPPED;
                secs += o[j].seconds;
            }
        fputs("  <testsuite name=\"", f);
        xml_str(f, o[i].suite);
        fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" "
                   "skipped=\"%zu\" time=\"%.3f\">\n", t, fl, er, sk, secs);
        for (size_t j = i; j < n; j++) {
            if (strcmp(o[j].suite, o[i].suite) != 0)
                continue;
            fputs("    <testcase classname=\"", f);
            xml_str(f, o[j].suite);
            fputs("\" name=\"", f);
            xml_str(f, o[j].id);
            fprintf(f, "\" time=\"%.3f\"", o[j].seconds);
            if (o[j].status == CF_PASSED) {
                fputs("/>\n", f);
                continue;
            }
            const char *tag = o[j].status == CF_SKIPPED ? "skipped"
                              : o[j].status == CF_FAILED ? "failure"
                                                         : "error";
            fprintf(f, ">\n      <%s type=\"%s\" message=\"", tag,
                    cf_status_word(o[j].status));
            xml_str(f, o[j].detail ? o[j].detail : "");
            fputs("\">", f);
            if (o[j].status != CF_SKIPPED) {
                fputs("ranks ", f);
                xml_str(f, o[j].ranks);
            }
            fprintf(f, "</%s>\n    </testcase>\n", tag);
        }
        fputs("  </testsuite>\n", f);
    }
    fputs("</testsuites>\n", f);
    return fclose(f) == 0 ? 0 : -1;
}
