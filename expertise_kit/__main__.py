from expertise_kit.cli import main

main()
