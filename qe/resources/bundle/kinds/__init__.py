"""The kinds of bundle member, one module each: every module registers one ``MemberKind`` record
(``qe.resources.bundle.members``), which ``member_kinds()`` finds by module name."""
