# METADATA
# title: Violation builder
# description: >-
#   The one place a violation object is built, so that every policy reports the same
#   shape: policy id, rule, severity, a one-line message and the numbers that failed.
package capgate.lib.result

# METADATA
# title: violation
# description: >-
#   A violation object. The policy id and severity are passed explicitly, at the rule
#   that raises it, rather than read from its METADATA with rego.metadata.rule().
violation(policy, rule, severity, message, details) := {
	"policy": policy,
	"rule": rule,
	"severity": severity,
	"message": message,
	"details": details,
}

# METADATA
# title: rounded
# description: >-
#   A number rounded to three decimals, for messages and computed details: both
#   engines then print and compare the same value.
rounded(x) := round(x * 1000) / 1000

# METADATA
# title: show
# description: >-
#   A value as message text: numbers with at most three decimals (written out, never in
#   exponent form; the gate input's numbers are at most 1e12 in magnitude), null as
#   "unknown", strings as they are, booleans as true/false, anything else as JSON.
#   Only built-ins OPA compiles into its Wasm module are used (format_int, concat,
#   substring): sprintf would be left to the engine's host, and OPA's sprintf prints
#   a number by its text (5.0 is a float to %d), which a host cannot see.
show(x) := _num(x) if is_number(x)

else := "unknown" if x == null

else := x if is_string(x)

else := "true" if x == true

else := "false" if x == false

else := json.marshal(x)

_num(x) := s if {
	m := round(abs(x) * 1000)
	whole := floor(m / 1000)
	s := _join(_sign(x, m), whole, m - (whole * 1000))
}

_sign(x, m) := "-" if {
	x < 0
	m > 0
} else := ""

_join(sign, whole, 0) := concat("", [sign, _digits(whole)])

_join(sign, whole, frac) := concat("", [sign, _digits(whole), ".", trim_right(_pad(format_int(frac, 10), 3), "0")]) if frac != 0

# OPA's Wasm format_int fails from 2^31 on: whole numbers are written in two parts
# below 10^9 each (exact up to 2^31 * 10^9, beyond any number the gate input holds).
_digits(n) := format_int(n, 10) if n < 1000000000

_digits(n) := concat("", [format_int(high, 10), _pad(format_int(n - (high * 1000000000), 10), 9)]) if {
	n >= 1000000000
	high := floor(n / 1000000000)
}

_pad(digits, width) := concat("", [substring("000000000", 0, width - count(digits)), digits])
