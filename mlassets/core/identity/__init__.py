"""Who is acting: the principal (the operating-system user locally, a scoped token at the endpoint), the teams and
roles of ``access.yaml`` (``access``) and the hashed, rotatable tokens (``tokens``)."""
