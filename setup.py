"""Package metadata for memlm, read from settings.ini (nbdev 2 convention)."""
from configparser import ConfigParser
import setuptools

cfg = ConfigParser(delimiters=['='])
cfg.read('settings.ini')
cfg = cfg['DEFAULT']

licenses = {'apache2': ('Apache Software License 2.0', 'OSI Approved :: Apache Software License')}
statuses = ['1 - Planning', '2 - Pre-Alpha', '3 - Alpha', '4 - Beta', '5 - Production/Stable',
            '6 - Mature', '7 - Inactive']
lic = licenses[cfg['license']]
requirements = cfg.get('requirements', '').split()
dev_requirements = cfg.get('dev_requirements', '').split()
extras = {k: cfg.get(f'{k}_requirements', '').split() for k in ('reports', 'cluster', 'docs')}

setuptools.setup(
    name=cfg['lib_name'],
    version=cfg['version'],
    license=lic[0],
    description=cfg['description'],
    author=cfg['author'],
    author_email=cfg['author_email'],
    url=cfg['git_url'],
    keywords=cfg['keywords'].split(),
    classifiers=[
        'Development Status :: ' + statuses[int(cfg['status']) - 1],
        'Intended Audience :: ' + cfg['audience'],
        'License :: ' + lic[1],
        'Natural Language :: ' + cfg['language'],
        'Programming Language :: Python :: 3.11',
        'Programming Language :: Python :: 3.12',
    ],
    packages=setuptools.find_packages(include=['memlm', 'memlm.*']),
    include_package_data=True,
    package_data={'memlm': ['py.typed']},
    install_requires=requirements,
    extras_require={'dev': dev_requirements + extras['reports'] + extras['cluster'], **extras},
    python_requires='>=' + cfg['min_python'],
    long_description=open('README.md').read() if __import__('os').path.exists('README.md') else '',
    long_description_content_type='text/markdown',
    zip_safe=False,
)
