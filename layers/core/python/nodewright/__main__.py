from nodewright.cli import program

program()
