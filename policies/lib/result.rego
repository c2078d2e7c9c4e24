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
