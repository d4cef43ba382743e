#!/usr/bin/env bash
# The suite's summary, from the test runner's JUnit report and the skips
# the tests recorded (tests/common/mod.rs, `skip!`):
#   the wall time and the three slowest tests, every failed test, then
#   `N passed, N failed, N skipped` and every skipped test with its reason.
# A skipped test ran (and passed what it could) but is counted apart from
# the passes. Usage: summary.sh JUNIT_XML SKIPS_FILE WALL_SECONDS
# Exits 1 when a test failed or the report is missing.
set -euo pipefail
junit=$1 skips=$2 wall=$3
if [ ! -s "$junit" ]; then
    echo "tests: no results ($junit is missing: the tests did not build or run)"
    exit 1
fi
awk -v skips="$skips" -v wall="$wall" '
function attr(line, key,    m) {
    if (match(line, " " key "=\"[^\"]*\"")) {
        m = substr(line, RSTART + length(key) + 3, RLENGTH - length(key) - 4)
        return m
    }
    return ""
}
function unxml(s) {
    gsub(/&lt;/, "<", s); gsub(/&gt;/, ">", s); gsub(/&quot;/, "\"", s)
    gsub(/&apos;/, "\047", s); gsub(/&amp;/, "\\&", s)
    return s
}
function finish() {
    if (current == "") return
    total++
    if (failed_now) { failed++; failures[failed] = current }
    times[current] = time_now
    current = ""
}
BEGIN {
    FS = "\t"
    while ((getline line < skips) > 0) {
        split(line, f, "\t")
        key = f[1] "::" f[2]
        if (key in reason) {
            reason[key] = reason[key] "; " f[3]
        } else {
            order[++nskips] = key
            reason[key] = f[3]
        }
    }
}
/<testcase / {
    finish()
    class = unxml(attr($0, "classname")); sub(/^tally::/, "", class)
    if (class == "tally") class = "lib"
    current = class "::" unxml(attr($0, "name"))
    time_now = attr($0, "time") + 0
    failed_now = 0
    if ($0 ~ /\/>[ \t]*$/) finish()
    next
}
/<(failure|error)[ >\/]/ { failed_now = 1 }
/<\/testcase>/ { finish() }
END {
    finish()
    # The three slowest.
    n = 0
    for (t in times) { n++; names[n] = t }
    for (i = 1; i <= n; i++)
        for (j = i + 1; j <= n; j++)
            if (times[names[j]] > times[names[i]]) { x = names[i]; names[i] = names[j]; names[j] = x }
    printf "the suite took %dm %02ds; the slowest tests:\n", int(wall / 60), wall % 60
    for (i = 1; i <= n && i <= 3; i++) printf "  %7.1f s  %s\n", times[names[i]], names[i]
    for (i = 1; i <= failed; i++) printf "failed: %s\n", failures[i]
    skipped = 0
    for (i = 1; i <= nskips; i++) {
        k = order[i]
        if (!(k in times)) continue          # a test of another run
        failed_test = 0
        for (j = 1; j <= failed; j++) if (failures[j] == k) failed_test = 1
        if (!failed_test) { skipped++; listed[skipped] = k }
    }
    passed = total - failed - skipped
    printf "%d passed, %d failed, %d skipped\n", passed, failed, skipped
    for (i = 1; i <= skipped; i++) printf "skipped: %s: %s\n", listed[i], reason[listed[i]]
    exit (failed > 0 || total == 0) ? 1 : 0
}
' "$junit"
