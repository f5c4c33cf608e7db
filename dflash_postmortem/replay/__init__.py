"""Reference DFlash drafter training loop, incident scenarios and a verifying launcher.

torch is imported only by the loop's modules (model, drafter, train, dist), so `launch` and the
CLI work without it. On the top floor with the CLI: it may import anything of the package
(docs/architecture.md, "Who may import whom").
"""
