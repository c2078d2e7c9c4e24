# METADATA
# title: Violation builder
# description: >-
#   The one place a violation object is built, so that every policy reports the same
#   shape: policy id, rule, severity, a one-line message and the numbers that failed.
package capgate.lib.result

# METADATA
# title: violation
# description: >-
#   A violation object. The policy id and severity are passed explicitly because the
#   embedded engine (regopy) does not implement rego.metadata.rule().
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
#   exponent form, for |x| < 2^31), null as "unknown", anything else as %v. Both
#   engines print the same text for the same value.
show(x) := _num(x) if is_number(x)

else := "unknown" if x == null

else := sprintf("%v", [x])

_num(x) := s if {
	m := round(abs(x) * 1000)
	whole := floor(m / 1000)
	s := _join(_sign(x, m), whole, m - (whole * 1000))
}

_sign(x, m) := "-" if {
	x < 0
	m > 0
} else := ""

_join(sign, whole, 0) := sprintf("%s%d", [sign, whole])

_join(sign, whole, frac) := sprintf("%s%d.%s", [sign, whole, trim_right(sprintf("%03d", [frac]), "0")]) if frac != 0
