"""Reference DFlash drafter training loop, incident scenarios and a verifying launcher.

torch is imported only by the loop's modules (model, drafter, train, dist), so `launch` and the
CLI work without it.
"""
