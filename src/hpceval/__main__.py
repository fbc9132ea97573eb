from hpceval.cli import main

main()
