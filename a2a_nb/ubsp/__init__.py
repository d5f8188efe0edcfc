"""End-to-end protected payloads (Profile: Optional Untrusted-Broker Security Profile, ubsp-v1) and the trust
in the keys they use."""
