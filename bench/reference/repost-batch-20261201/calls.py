import sys,re
# sum calls= for callees matching a name in a callgrind out file (name compression aware)
names={}
want=sys.argv[2:]
tot={w:0 for w in want}
cur_cfn=None
for line in open(sys.argv[1]):
    m=re.match(r'c?fn=\((\d+)\)(?: (.*))?',line)
    if m:
        i,n=m.group(1),m.group(2)
        if n: names[i]=n.strip()
        if line.startswith('cfn='): cur_cfn=names.get(i)
        continue
    m=re.match(r'calls=(\d+)',line)
    if m and cur_cfn in tot:
        tot[cur_cfn]+=int(m.group(1))
print(sys.argv[1], tot)
