"""The kinds of bundle member, one module each: every module registers one ``MemberKind`` record
(``qe.bundle.members``), which ``member_kinds()`` finds by module name."""
