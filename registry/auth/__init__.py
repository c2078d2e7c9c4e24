"""Who is asking (authentication) and what they may do (roles, teams)."""
