"""The notebook face: rich displays and widgets. They only present; the rules live in protocol/."""
