from ctxasm.cli.main import run

run()
